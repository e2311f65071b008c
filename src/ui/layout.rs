//! Sidebar, top bar with the environment and the signed-in user, and the page outlet.

use leptos::prelude::*;
use leptos_router::components::Outlet;
use leptos_router::hooks::use_location;

use crate::api::shell::{load_shell_info, ShellInfo};
use crate::model::accounts::Role;
use crate::ui::components::badge::EnvBadge;

/// (path, label, who sees it)
const NAV: &[(&str, &str, Role)] = &[
    ("/", "Overview", Role::Viewer),
    ("/kill-switches", "Kill switches", Role::Viewer),
    ("/events", "Events", Role::Viewer),
    ("/outbox", "Outbox", Role::Viewer),
    ("/conversations", "Conversations", Role::Viewer),
    ("/audit", "Audit", Role::Viewer),
    ("/inbox", "Inbox", Role::Viewer),
    ("/idempotency", "Idempotency", Role::Viewer),
    ("/measurements", "Measurements", Role::Viewer),
    ("/api", "API", Role::Viewer),
    ("/users", "Users", Role::Admin),
];

#[component]
pub fn Layout() -> impl IntoView {
    let info = Resource::new(|| (), |_| load_shell_info());
    view! {
        <div class="flex min-h-screen">
            <Transition fallback=|| view! { <aside class="w-56 shrink-0 bg-slate-900" /> }>
                {move || Suspend::new(async move {
                    let info = info.await.ok();
                    view! { <Sidebar info /> }
                })}
            </Transition>
            <div class="flex min-w-0 flex-1 flex-col">
                <Transition fallback=|| view! { <header class="h-14 border-b border-slate-200 bg-white" /> }>
                    {move || Suspend::new(async move {
                        let info = info.await.ok();
                        view! { <TopBar info /> }
                    })}
                </Transition>
                <main class="mx-auto w-full max-w-6xl flex-1 px-6 py-6">
                    <Outlet />
                </main>
            </div>
        </div>
    }
}

#[component]
fn Sidebar(info: Option<ShellInfo>) -> impl IntoView {
    let role = info
        .and_then(|i| i.user)
        .map(|u| u.role)
        .unwrap_or(Role::Viewer);
    let location = use_location();
    let links = NAV
        .iter()
        .filter(|(_, _, needed)| role.allows(*needed))
        .map(|(href, label, _)| {
            let href = *href;
            let current = move || {
                let path = location.pathname.get();
                let here = if href == "/" { path == "/" } else { path.starts_with(href) };
                here.then_some("page")
            };
            view! {
                <li>
                    <a
                        href=href
                        aria-current=current
                        class="block rounded px-3 py-2 text-sm text-slate-300 hover:bg-slate-800 hover:text-white aria-[current=page]:bg-slate-700 aria-[current=page]:text-white"
                    >
                        {*label}
                    </a>
                </li>
            }
        })
        .collect_view();
    view! {
        <aside class="w-56 shrink-0 bg-slate-900 px-3 py-4">
            <a href="/" class="mb-6 block px-3 text-lg font-semibold text-white">
                "ops-console"
            </a>
            <nav aria-label="Main">
                <ul class="space-y-1">{links}</ul>
            </nav>
        </aside>
    }
}

#[component]
fn TopBar(info: Option<ShellInfo>) -> impl IntoView {
    let env = info
        .as_ref()
        .map(|i| i.environment.clone())
        .unwrap_or_default();
    let user = info.and_then(|i| i.user);
    view! {
        <header class="flex h-14 items-center justify-between border-b border-slate-200 bg-white px-6">
            <EnvBadge env />
            {user
                .map(|u| {
                    view! {
                        <div class="flex items-center gap-4 text-sm">
                            <span data-testid="signed-in-as">
                                "Signed in as " <strong>{u.name}</strong> " ("
                                {u.role.as_str()} ")"
                            </span>
                            <form method="post" action="/logout">
                                <button
                                    type="submit"
                                    class="rounded border border-slate-300 px-3 py-1 hover:bg-slate-100"
                                >
                                    "Sign out"
                                </button>
                            </form>
                        </div>
                    }
                })}
        </header>
    }
}
