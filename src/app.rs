//! The HTML shell and the router. Nothing else.

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, Stylesheet, Title};
use leptos_router::components::{ParentRoute, Route, Router, Routes};
use leptos_router::path;
use leptos_router::{lazy_route, Lazy, LazyRoute, SsrMode};

use crate::ui::layout::Layout;
use crate::ui::pages::audit::AuditPage;
use crate::ui::pages::conversations::detail::ConversationPage;
use crate::ui::pages::conversations::ConversationsPage;
use crate::ui::pages::events::{ConversationStatePage, EventsPage};
use crate::ui::pages::idempotency::{IdempotencyKeyPage, IdempotencyPage};
use crate::ui::pages::inbox::settings::InboxSettingsPage;
use crate::ui::pages::inbox::user::InboxUserPage;
use crate::ui::pages::inbox::InboxPage;
use crate::ui::pages::kill_switches::approvals::KillSwitchApprovalsPage;
use crate::ui::pages::kill_switches::automation::KillSwitchAutomationPage;
use crate::ui::pages::measurements::MeasurementsPage;
use crate::ui::pages::openapi::OpenApiPage;
use crate::ui::pages::outbox::receiver::ReceiverPage;
use crate::ui::pages::outbox::OutboxPage;
use crate::ui::pages::{
    api_keys::ApiKeysPage, kill_switches::KillSwitchesPage, login::LoginPage, not_found::NotFound,
    overview::OverviewPage, users::UsersPage,
};

/// The HTML page around the app (the server's only).
#[cfg(feature = "ssr")]
pub fn shell(options: LeptosOptions) -> impl IntoView {
    use leptos_meta::MetaTags;

    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
                <script src="/local-time.js" defer></script>
                <HydrationScripts options />
                <MetaTags />
            </head>
            <body class="bg-slate-50 text-slate-900 antialiased">
                <App />
            </body>
        </html>
    }
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    view! {
        <Stylesheet id="leptos" href="/pkg/ops-console.css" />
        <Title formatter=|page: String| format!("{page} · ops-console") />
        <Router>
            <Routes fallback=|| view! { <NotFound /> }>
                <Route ssr=SsrMode::Async path=path!("/login") view={Lazy::<LoginRoute>::new()} />
                <ParentRoute ssr=SsrMode::Async path=path!("") view=Layout>
                    <Route ssr=SsrMode::Async path=path!("") view={Lazy::<OverviewRoute>::new()} />
                    <Route ssr=SsrMode::Async path=path!("kill-switches") view={Lazy::<KillSwitchesRoute>::new()} />
                    <Route ssr=SsrMode::Async path=path!("kill-switches/automation") view={Lazy::<KillSwitchAutomationRoute>::new()} />
                    <Route ssr=SsrMode::Async path=path!("kill-switches/approvals") view={Lazy::<KillSwitchApprovalsRoute>::new()} />
                    <Route ssr=SsrMode::Async path=path!("conversations") view={Lazy::<ConversationsRoute>::new()} />
                    <Route ssr=SsrMode::Async path=path!("conversations/view") view={Lazy::<ConversationRoute>::new()} />
                    <Route ssr=SsrMode::Async path=path!("events") view={Lazy::<EventsRoute>::new()} />
                    <Route ssr=SsrMode::Async path=path!("events/conversation") view={Lazy::<ConversationStateRoute>::new()} />
                    <Route ssr=SsrMode::Async path=path!("outbox") view={Lazy::<OutboxRoute>::new()} />
                    <Route ssr=SsrMode::Async path=path!("outbox/receiver") view={Lazy::<ReceiverRoute>::new()} />
                    <Route ssr=SsrMode::Async path=path!("audit") view={Lazy::<AuditRoute>::new()} />
                    <Route ssr=SsrMode::Async path=path!("inbox") view={Lazy::<InboxRoute>::new()} />
                    <Route ssr=SsrMode::Async path=path!("inbox/user") view={Lazy::<InboxUserRoute>::new()} />
                    <Route ssr=SsrMode::Async path=path!("inbox/settings") view={Lazy::<InboxSettingsRoute>::new()} />
                    <Route ssr=SsrMode::Async path=path!("idempotency") view={Lazy::<IdempotencyRoute>::new()} />
                    <Route ssr=SsrMode::Async path=path!("idempotency/key") view={Lazy::<IdempotencyKeyRoute>::new()} />
                    <Route ssr=SsrMode::Async path=path!("measurements") view={Lazy::<MeasurementsRoute>::new()} />
                    <Route ssr=SsrMode::Async path=path!("users") view={Lazy::<UsersRoute>::new()} />
                    <Route ssr=SsrMode::Async path=path!("api-keys") view={Lazy::<ApiKeysRoute>::new()} />
                    <Route ssr=SsrMode::Async path=path!("api") view={Lazy::<OpenApiRoute>::new()} />
                </ParentRoute>
            </Routes>
        </Router>
    }
}

/// Each page is a lazy route: its code is its own wasm chunk, loaded when the page is
/// first shown (with `cargo leptos build --split`), so a first load carries the shell and
/// that page only. Leptos preloads a route's files with the page (the split manifest,
/// which `scripts/bundle-wasm.mjs` points at each route's bundle).
macro_rules! lazy_pages {
    ($($route:ident => $page:ident),* $(,)?) => {$(
        struct $route;

        #[lazy_route]
        impl LazyRoute for $route {
            fn data() -> Self {
                $route
            }

            fn view(_this: Self) -> AnyView {
                view! { <$page /> }.into_any()
            }
        }
    )*};
}

lazy_pages! {
    LoginRoute => LoginPage,
    OverviewRoute => OverviewPage,
    KillSwitchesRoute => KillSwitchesPage,
    KillSwitchAutomationRoute => KillSwitchAutomationPage,
    KillSwitchApprovalsRoute => KillSwitchApprovalsPage,
    ConversationsRoute => ConversationsPage,
    ConversationRoute => ConversationPage,
    EventsRoute => EventsPage,
    ConversationStateRoute => ConversationStatePage,
    OutboxRoute => OutboxPage,
    ReceiverRoute => ReceiverPage,
    AuditRoute => AuditPage,
    InboxRoute => InboxPage,
    InboxUserRoute => InboxUserPage,
    InboxSettingsRoute => InboxSettingsPage,
    IdempotencyRoute => IdempotencyPage,
    IdempotencyKeyRoute => IdempotencyKeyPage,
    MeasurementsRoute => MeasurementsPage,
    UsersRoute => UsersPage,
    ApiKeysRoute => ApiKeysPage,
    OpenApiRoute => OpenApiPage,
}
