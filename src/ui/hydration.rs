//! The scripts that bring a server-rendered page to life: Leptos's `HydrationScripts`, but
//! with the shell and the page's own code in one download (docs/page-weight.md, "First
//! load").
//!
//! `scripts/bundle-wasm.mjs` writes, for every lazy route, `first_<route>.wasm`: the shell
//! followed by the route's pieces, and lists it in the split manifest. The server preloads
//! a page's file with the HTML ([`preload_route`]). [`FIRST_LOAD_JS`] takes
//! that download, starts the shell from its first part and hands the rest to the split
//! loader. One Brotli stream over the shell and the page's code is about 10 KB smaller than
//! the two apart. A page without a first-load file (the "not found" page, a build without
//! `--split`) starts the shell from its own file, as Leptos's script does.

use std::collections::HashMap;
use std::sync::OnceLock;

use leptos::prelude::*;
use leptos_meta::Link;

/// The page's start-up script, called with the pkg path, the JS file's and the shell's names.
const FIRST_LOAD_JS: &str = include_str!("first_load.js");

/// The split loader's file (wasm-split's name; cargo-leptos hashes it only with hashed files,
/// which the console does not use).
const SPLIT_LOADER: &str = "__wasm_split.______________________.js";

/// `<HydrationScripts>` for a split build whose first-load files `bundle-wasm.mjs` wrote.
#[component]
pub fn PageScripts(options: LeptosOptions) -> impl IntoView {
    let pkg = format!("/{}", options.site_pkg_dir);
    let js = options.output_name.to_string();
    // The shell is `<name>_bg.wasm` unless the build named it (cargo-leptos sets the
    // variable), as in Leptos's own script.
    let shell = if option_env!("LEPTOS_OUTPUT_NAME").is_some() {
        js.clone()
    } else {
        format!("{js}_bg")
    };
    let loader = manifest(&options).map(|_| format!("{pkg}/{SPLIT_LOADER}"));
    let script = format!("{FIRST_LOAD_JS}({pkg:?}, {js:?}, {shell:?});");
    view! {
        <link rel="modulepreload" href=format!("{pkg}/{js}.js") crossorigin="" />
        {loader.map(|href| view! { <link rel="modulepreload" href=href crossorigin="" /> })}
        <script type="module">{script}</script>
    }
}

/// Preloads, in the page's `<head>`, what the split manifest lists for the lazy route whose
/// type is named `route` (its first-load file). Called by each lazy route's view.
///
/// Leptos writes these links itself when the context it reads is provided, but it reads
/// the routes a page used before a page's lazy route has always said so: about half the
/// pages came without the link, and their code started downloading only once the shell ran.
pub fn preload_route(route: &str) {
    // Read by `PageScripts`, which the page's `<head>` renders first.
    let Some((pkg, routes)) = MANIFEST.get().and_then(Option::as_ref) else {
        return;
    };
    // `#[lazy_route]` names a route's module `__<type in snake case>_view_<hash>`.
    let prefix = format!("__{}_view_", snake_case(route));
    let Some(files) = routes
        .iter()
        .find(|(k, _)| k.starts_with(&prefix))
        .map(|(_, v)| v)
    else {
        return;
    };
    for file in files {
        // Rendering a `leptos_meta` element registers it for the page's `<head>`.
        _ = view! {
            <Link rel="preload" href=format!("{pkg}/{file}.wasm") as_="fetch" type_="application/wasm" crossorigin="" />
        }
        .to_html();
    }
}

/// `OpenApiRoute` as `open_api_route`.
fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// The pkg path, and the files each lazy route's first load needs.
type Manifest = (String, HashMap<String, Vec<String>>);

static MANIFEST: OnceLock<Option<Manifest>> = OnceLock::new();

/// The split manifest (route to the files its first load needs), when the build was split;
/// read once.
fn manifest(options: &LeptosOptions) -> Option<&'static Manifest> {
    MANIFEST.get_or_init(|| read_manifest(options)).as_ref()
}

fn read_manifest(options: &LeptosOptions) -> Option<Manifest> {
    let path = std::path::Path::new(options.site_root.as_ref())
        .join(options.site_pkg_dir.as_ref())
        .join("__wasm_split_manifest.json");
    let text = std::fs::read_to_string(path).ok()?;
    match serde_json::from_str(&text) {
        Ok(routes) => Some((format!("/{}", options.site_pkg_dir), routes)),
        Err(e) => {
            tracing::error!(error = %e, "the split manifest does not parse: pages load without preloads");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::snake_case;

    #[test]
    fn a_route_type_reads_as_its_module_name() {
        assert_eq!(snake_case("OpenApiRoute"), "open_api_route");
        assert_eq!(
            snake_case("ConversationStateRoute"),
            "conversation_state_route"
        );
    }
}
