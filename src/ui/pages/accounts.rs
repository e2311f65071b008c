//! Users (admins only): roles, last sign-in, role changes and disabling, each with a reason.

use leptos::form::ActionForm;
use leptos::prelude::*;
use leptos_meta::Title;

use crate::api::accounts::{list_users, SetUserDisabled, SetUserRole};
use crate::model::accounts::{Role, UserSummary};
use crate::ui::components::alert::ActionResult;
use crate::ui::components::async_section::AsyncSection;
use crate::ui::components::table::DataTable;
use crate::ui::components::when;

#[component]
pub fn AccountsPage() -> impl IntoView {
    let set_role = ServerAction::<SetUserRole>::new();
    let set_disabled = ServerAction::<SetUserDisabled>::new();
    let users = Resource::new(
        move || (set_role.version().get(), set_disabled.version().get()),
        |_| list_users(),
    );
    view! {
        <Title text="Users" />
        <h1 class="text-2xl font-semibold">"Users"</h1>
        <div class="mt-4 space-y-2">
            <ActionResult value=move || set_role.value().get() success=|m: &String| m.clone() />
            <ActionResult value=move || set_disabled.value().get() success=|m: &String| m.clone() />
        </div>
        <AsyncSection load=move || users spacing="mt-4" let:list>
            <UserTable list set_role set_disabled />
        </AsyncSection>
    }
}

/// Every user, one row each.
#[component]
fn UserTable(
    list: Vec<UserSummary>,
    set_role: ServerAction<SetUserRole>,
    set_disabled: ServerAction<SetUserDisabled>,
) -> impl IntoView {
    // Keyed by what a change changes: after a change the row is built anew, so its forms
    // come back empty (an error keeps what was typed).
    view! {
        <DataTable
            label="Users"
            columns=&["Name", "Role", "State", "Last sign-in", "Change"]
            padded=true
            spacing="mt-4"
        >
            <For
                each=move || list.clone()
                key=|u| (u.name.clone(), u.role.as_str(), u.disabled)
                children=move |u| view! { <UserRow u set_role set_disabled /> }
            />
        </DataTable>
    }
}

/// A user, and the forms that change their role or disable (enable) them, each with a
/// reason.
#[component]
fn UserRow(
    u: UserSummary,
    set_role: ServerAction<SetUserRole>,
    set_disabled: ServerAction<SetUserDisabled>,
) -> impl IntoView {
    let options = Role::ALL
        .into_iter()
        .map(|r| view! { <option value=r.as_str() selected=r == u.role>{r.as_str()}</option> })
        .collect_view();
    let last = u
        .last_login_at
        .as_ref()
        .map(when)
        .unwrap_or_else(|| "never".into());
    let toggle = if u.disabled { "false" } else { "true" };
    let toggle_label = if u.disabled { "Enable" } else { "Disable" };
    let name = u.name.clone();
    let role_label = format!("Role for {name}");
    let role_reason_label = format!("Reason for changing {name}'s role");
    let toggle_reason_label = format!("Reason to {} {name}", toggle_label.to_lowercase());
    let testid = format!("user-{name}");
    let name_for_toggle = name.clone();
    view! {
        <tr class="border-t border-slate-100 align-top" data-testid=testid>
            <td class="py-3 pr-4 font-medium">{u.name.clone()}</td>
            <td class="py-3 pr-4">{u.role.as_str()}</td>
            <td class="py-3 pr-4">{if u.disabled { "disabled" } else { "active" }}</td>
            <td class="py-3 pr-4 whitespace-nowrap">{last}</td>
            <td class="py-3 pr-4">
                <ActionForm action=set_role attr:class="flex flex-wrap items-center gap-2">
                    <input type="hidden" name="name" value=name />
                    <select name="role" aria-label=role_label class="rounded border border-slate-300 px-1 py-1">
                        {options}
                    </select>
                    <input name="reason" aria-label=role_reason_label placeholder="Reason" required class="rounded border border-slate-300 px-2 py-1" />
                    <button type="submit" class="rounded border border-slate-300 px-2 py-1 hover:bg-slate-100">
                        "Change role"
                    </button>
                </ActionForm>
                <ActionForm action=set_disabled attr:class="mt-2 flex flex-wrap items-center gap-2">
                    <input type="hidden" name="name" value=name_for_toggle />
                    <input type="hidden" name="disabled" value=toggle />
                    <input name="reason" aria-label=toggle_reason_label placeholder="Reason" required class="rounded border border-slate-300 px-2 py-1" />
                    <button type="submit" class="rounded border border-slate-300 px-2 py-1 hover:bg-slate-100">
                        {toggle_label}
                    </button>
                </ActionForm>
            </td>
        </tr>
    }
}
