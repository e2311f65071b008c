use leptos::prelude::*;
use leptos_meta::Title;

use crate::api::switches::load_kill_switches;
use crate::model::switches::Switch;
use crate::ui::components::alert::ErrorBox;
use crate::ui::components::badge::OnOff;

#[component]
pub fn OverviewPage() -> impl IntoView {
    let switches = Resource::new(|| (), |_| load_kill_switches());
    view! {
        <Title text="Overview" />
        <h1 class="text-2xl font-semibold">"Overview"</h1>
        <Transition fallback=|| view! { <p class="mt-4 text-slate-500">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match switches.await {
                    Ok(v) => {
                        let items = Switch::ALL
                            .into_iter()
                            .map(|s| {
                                let on = v.switches.get(s).enabled;
                                view! {
                                    <div class="flex items-center justify-between rounded-lg border border-slate-200 bg-white p-4">
                                        <span class="font-medium">{s.label()}</span>
                                        <OnOff on alarming_when_on=s == Switch::AutomationEnabled />
                                    </div>
                                }
                            })
                            .collect_view();
                        view! {
                            <section class="mt-4" aria-label="Kill switches">
                                <div class="grid gap-4 md:grid-cols-2">{items}</div>
                                <a class="mt-2 inline-block text-sm text-sky-700 underline" href="/kill-switches">
                                    "Manage kill switches"
                                </a>
                            </section>
                        }
                            .into_any()
                    }
                    Err(error) => view! { <ErrorBox error /> }.into_any(),
                }
            })}
        </Transition>
    }
}
