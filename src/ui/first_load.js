// A page's start-up (src/ui/hydration.rs): the shell and the page's own code arrive in one
// file, `first_<route>.wasm`, which the server preloads with the HTML. Its parts: a
// little-endian u32 count, a u32 length per part, then the parts; the shell first.
(function (pkg, js, shell) {
	const link = document.querySelector('link[rel="preload"][href*="/first_"]');
	const route = link && /\/first_(\w+)\.wasm$/.exec(link.getAttribute("href"));
	const own = () => fetch(`${pkg}/${shell}.wasm`);
	let wasm = `${pkg}/${shell}.wasm`;
	if (route) {
		const parts = fetch(link.href)
			.then((r) => {
				if (!r.ok) throw new Error(`${link.href}: HTTP ${r.status}`);
				return r.arrayBuffer();
			})
			.then((b) => {
				const view = new DataView(b);
				const count = view.getUint32(0, true);
				const list = [];
				let offset = 4 * (count + 1);
				for (let i = 0; i < count; i++) {
					const length = view.getUint32(4 * (i + 1), true);
					list.push(b.slice(offset, offset + length));
					offset += length;
				}
				if (count < 1 || offset !== b.byteLength) throw new Error(`${link.href}: parts do not add up`);
				return list;
			});
		// The split loader takes the page's pieces from here; if this download fails, it
		// fetches them itself, and the shell comes from its own file.
		globalThis.__opsFirstLoad = { route: route[1], pieces: parts.then((list) => list.slice(1)) };
		wasm = parts.then((list) => list[0], own);
	}
	import(`${pkg}/${js}.js`).then((mod) => mod.default({ module_or_path: wasm }).then(() => mod.hydrate()));
})
