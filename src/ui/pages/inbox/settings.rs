//! Inbox settings (`/inbox/settings`, writers): a tenant's settings and its inboxes'
//! (title, description, lifetimes), each form showing a refused value's error next to its
//! field. Off the Inbox page, so the page people publish from carries none of these forms.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use super::forms::{InboxForm, TenantForm};
use crate::api::inbox::{load_inbox_page, SaveInbox, SaveTenant};
use crate::model::inbox::InboxView;
use crate::ui::components::alert::ActionResult;
use crate::ui::components::async_section::AsyncSection;
use crate::ui::components::links::enc;
use crate::ui::components::post_form::FormAction;
use crate::ui::data::page_data;

#[component]
pub fn InboxSettingsPage() -> impl IntoView {
    let query = use_query_map();
    let q = move |k: &'static str| query.read().get(k).unwrap_or_default();
    let save_tenant = FormAction::new::<SaveTenant>();
    let save_inbox = FormAction::new::<SaveInbox>();
    let (tenant_saved, inbox_saved) = (save_tenant.saved(), save_inbox.saved());
    let data = page_data(
        move || {
            (
                q("tenant"),
                q("inbox"),
                tenant_saved.get() + inbox_saved.get(),
            )
        },
        |(t, i, _)| load_inbox_page(t, i, None, None),
    );
    let back = move || match (q("tenant"), q("inbox")) {
        (t, _) if t.is_empty() => "/inbox".to_string(),
        (t, i) if i.is_empty() => format!("/inbox?tenant={}", enc(&t)),
        (t, i) => format!("/inbox?tenant={}&inbox={}", enc(&t), enc(&i)),
    };
    view! {
        <Title text="Inbox settings" />
        <a href=back class="text-sm text-sky-800 underline">"← Inbox"</a>
        <h1 class="mt-2 text-2xl font-semibold">"Inbox settings"</h1>
        <div class="mt-3 space-y-2">
            <ActionResult value=move || save_tenant.value().get() success=|t: &String| format!("Tenant {t} saved.") />
            <ActionResult value=move || save_inbox.value().get() success=|i: &String| format!("Inbox {i} saved.") />
        </div>
        <AsyncSection load=move || data spacing="mt-4" let:page>
            <Settings page save_tenant save_inbox />
        </AsyncSection>
    }
}

/// The tenant's form, its inboxes with their lifetimes, and the inbox form.
#[component]
fn Settings(
    page: InboxView,
    save_tenant: FormAction<String>,
    save_inbox: FormAction<String>,
) -> impl IntoView {
    if !page.can_write {
        return view! { <p class="mt-4 text-sm" role="status">"Only operators and admins change inbox settings."</p> }.into_any();
    }
    let tenant = page.tenant.clone().unwrap_or_default();
    let inboxes = (!tenant.is_empty()).then(|| {
        let list = page
            .inboxes
            .iter()
            .map(|i| view! { <li class="py-1">{i.title.clone()}<span class="ml-2 font-mono text-xs text-slate-500">{format!("{} · {}", i.key, i.ttl)}</span></li> })
            .collect_view();
        view! {
            <section class="mt-6">
                <h2 class="text-lg font-semibold">{format!("Inboxes of {tenant}")}</h2>
                <ul class="mt-1 text-sm">{list}</ul>
                <InboxForm tenant=tenant.clone() current=page.inbox.clone() save_inbox />
            </section>
        }
    });
    view! {
        <section class="mt-4">
            <h2 class="text-lg font-semibold">"Tenant"</h2>
            <TenantForm
                tenant=tenant.clone()
                title=page.tenant_title.clone().unwrap_or_default()
                ttl=page.tenant_ttl.clone().unwrap_or_else(|| "30d".into())
                save_tenant
            />
        </section>
        {inboxes}
    }
    .into_any()
}
