//! Sidebar, top bar with the environment and the signed-in user, and the page outlet.

use leptos::prelude::*;
use leptos_router::components::Outlet;
use leptos_router::hooks::use_location;

use crate::api::shell::{load_shell_info, LiveSwitch, ShellInfo};
use crate::model::users::Role;
use crate::ui::components::badge::EnvBadge;
use crate::ui::components::moment::Moment;
use crate::ui::data::{page_data, PageData};

/// The frame's data (who is signed in, the switches out of their safe position), for a
/// page that changed what it shows (the kill switches) to read it again at once.
#[derive(Clone, Copy)]
pub struct ShellData(pub PageData<Result<ShellInfo, crate::model::AppError>>);

/// How often every open page reads the switches again (with JavaScript): a change made
/// in another tab, by another admin or through the API shows in the banner within this.
#[cfg(feature = "hydrate")]
const SWITCHES_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

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
    ("/api-keys", "API keys", Role::Admin),
];

/// Every signed-in page: the frame around the router's page.
#[component]
pub fn Layout() -> impl IntoView {
    view! {
        <Frame>
            <Outlet />
        </Frame>
    }
}

/// The skip link, the sidebar, the top bar with the kill-switch banner, and `children` as
/// the main content (a page, or "Page not found").
#[component]
pub fn Frame(children: Children) -> impl IntoView {
    let info = page_data(|| (), |_| load_shell_info());
    provide_context(ShellData(info));
    #[cfg(feature = "hydrate")]
    if let Ok(h) = set_interval_with_handle(move || info.refetch(), SWITCHES_EVERY) {
        on_cleanup(move || h.clear());
    }
    view! {
        <a
            href="#main"
            class="sr-only focus:not-sr-only focus:absolute focus:left-2 focus:top-2 focus:z-10 focus:rounded focus:bg-white focus:px-3 focus:py-2"
        >
            "Skip to content"
        </a>
        <div class="flex min-h-screen flex-col md:flex-row">
            <Transition fallback=|| view! { <aside class="bg-slate-900 md:w-56 md:shrink-0" /> }>
                {move || Suspend::new(async move {
                    let info = info.await.ok();
                    view! { <Sidebar info /> }
                })}
            </Transition>
            <div class="flex min-w-0 flex-1 flex-col">
                <Transition fallback=|| view! { <header class="h-14 border-b border-slate-200 bg-white" /> }>
                    {move || Suspend::new(async move {
                        let info = info.await.ok();
                        let lines = info
                            .as_ref()
                            .map(|i| i.live_switches.clone())
                            .unwrap_or_default();
                        view! {
                            <TopBar info />
                            {(!lines.is_empty()).then(|| view! { <SwitchBanner lines /> })}
                        }
                    })}
                </Transition>
                <main id="main" class="mx-auto w-full max-w-6xl flex-1 px-4 py-6 md:px-6">
                    {children()}
                </main>
            </div>
        </div>
    }
}

/// While automation may act (safe mode off, or automation on), every page says so: which
/// switch, who changed it, when and why.
#[component]
fn SwitchBanner(lines: Vec<LiveSwitch>) -> impl IntoView {
    let items = lines
        .into_iter()
        .map(|l| {
            let when = (!l.when.is_empty()).then(|| view! { ", " <Moment iso=l.when /> });
            view! {
                <li>
                    <strong>{l.what}</strong>
                    " — changed by " {l.by} {when}
                    {l.why.map(|w| view! { ": “" {w} "”" })}
                    {l.ends.map(|(end, left)| view! {
                        <span class="block font-medium" data-testid="switch-ends">
                            "Goes back by itself at " <Moment iso=end /> " (" {left} ")"
                        </span>
                    })}
                </li>
            }
        })
        .collect::<Vec<_>>();
    view! {
        <div
            data-testid="switch-banner"
            class="flex flex-wrap items-start justify-between gap-2 border-b border-amber-300 bg-amber-50 px-4 py-2 text-sm text-amber-900 md:px-6"
        >
            <ul>{items}</ul>
            <a href="/kill-switches" class="underline">"Review the kill switches"</a>
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
                // The page or one under it (`/outbox/receiver` is the Outbox's; `/api-keys`
                // is not the API's).
                let here = path == href
                    || (href != "/"
                        && path.strip_prefix(href).is_some_and(|rest| rest.starts_with('/')));
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
    // On a phone the menu folds away behind a toggle (a checkbox: it works without
    // JavaScript); from `md` up it is the sidebar.
    view! {
        <aside class="group bg-slate-900 px-3 py-3 md:w-56 md:shrink-0 md:py-4">
            <div class="flex items-center justify-between">
                <a href="/" class="block px-3 text-lg font-semibold text-white md:mb-6">
                    "ops-console"
                </a>
                <input id="menu-toggle" type="checkbox" aria-label="Menu" class="peer sr-only md:hidden" />
                <label
                    for="menu-toggle"
                    class="cursor-pointer rounded border border-slate-600 px-3 py-1 text-sm text-slate-200 peer-focus-visible:ring-2 peer-focus-visible:ring-sky-400 md:hidden"
                >
                    "Menu"
                </label>
            </div>
            <nav aria-label="Main" class="mt-3 hidden group-has-[#menu-toggle:checked]:block md:mt-0 md:block">
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
        <header class="flex min-h-14 flex-wrap items-center justify-between gap-2 border-b border-slate-200 bg-white px-4 py-2 md:px-6">
            <EnvBadge env />
            {user
                .map(|u| {
                    view! {
                        <div class="flex flex-wrap items-center gap-x-4 gap-y-1 text-sm">
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
