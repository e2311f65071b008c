//! The HTML shell and the router. Nothing else.

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Stylesheet, Title};
use leptos_router::components::{ParentRoute, Route, Router, Routes};
use leptos_router::path;
use leptos_router::SsrMode;

use crate::ui::layout::Layout;
use crate::ui::pages::audit::AuditPage;
use crate::ui::pages::conversations::detail::ConversationPage;
use crate::ui::pages::conversations::ConversationsPage;
use crate::ui::pages::events::{ConversationStatePage, EventsPage};
use crate::ui::pages::idempotency::{IdempotencyKeyPage, IdempotencyPage};
use crate::ui::pages::inbox::user::InboxUserPage;
use crate::ui::pages::inbox::InboxPageView;
use crate::ui::pages::measurements::MeasurementsPage;
use crate::ui::pages::openapi::OpenApiPage;
use crate::ui::pages::outbox::OutboxPageView;
use crate::ui::pages::{
    accounts::AccountsPage, login::LoginPage, not_found::NotFound, overview::OverviewPage,
    switches::SwitchesPage,
};

pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
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
    // Effects run only in the browser: this marks the page as hydrated (tests wait for it).
    Effect::new(|_| {
        if let Some(body) = document().body() {
            let _ = body.set_attribute("data-hydrated", "true");
        }
    });
    view! {
        <Stylesheet id="leptos" href="/pkg/ops-console.css" />
        <Title formatter=|page: String| format!("{page} · ops-console") />
        <Router>
            <Routes fallback=|| view! { <NotFound /> }>
                <Route ssr=SsrMode::Async path=path!("/login") view=LoginPage />
                <ParentRoute ssr=SsrMode::Async path=path!("") view=Layout>
                    <Route ssr=SsrMode::Async path=path!("") view=OverviewPage />
                    <Route ssr=SsrMode::Async path=path!("kill-switches") view=SwitchesPage />
                    <Route ssr=SsrMode::Async path=path!("conversations") view=ConversationsPage />
                    <Route ssr=SsrMode::Async path=path!("conversations/view") view=ConversationPage />
                    <Route ssr=SsrMode::Async path=path!("events") view=EventsPage />
                    <Route ssr=SsrMode::Async path=path!("events/conversation") view=ConversationStatePage />
                    <Route ssr=SsrMode::Async path=path!("outbox") view=OutboxPageView />
                    <Route ssr=SsrMode::Async path=path!("audit") view=AuditPage />
                    <Route ssr=SsrMode::Async path=path!("inbox") view=InboxPageView />
                    <Route ssr=SsrMode::Async path=path!("inbox/user") view=InboxUserPage />
                    <Route ssr=SsrMode::Async path=path!("idempotency") view=IdempotencyPage />
                    <Route ssr=SsrMode::Async path=path!("idempotency/key") view=IdempotencyKeyPage />
                    <Route ssr=SsrMode::Async path=path!("measurements") view=MeasurementsPage />
                    <Route ssr=SsrMode::Async path=path!("users") view=AccountsPage />
                    <Route ssr=SsrMode::Async path=path!("api") view=OpenApiPage />
                </ParentRoute>
            </Routes>
        </Router>
    }
}
