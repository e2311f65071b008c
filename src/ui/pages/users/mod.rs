//! Users (admins only): people who sign in (roles, last sign-in, role changes, disabling,
//! password resets, new users with a one-time password), each change audited. Machine
//! clients' keys are on their own page (`/api-keys`).

use leptos::prelude::*;
use leptos_meta::Title;

use crate::api::users::{load_users, AddUser, ResetPassword, SetUserDisabled, SetUserRole};
use crate::model::users::{OneTime, Role, UserSummary, UsersView};
use crate::ui::components::alert::ActionResult;
use crate::ui::components::async_section::AsyncSection;
use crate::ui::components::form::{field_error, invalid_attrs, FieldError, FormKey, SecretSubmit};
use crate::ui::components::moment::Moment;
use crate::ui::components::one_time::OneTimeResult;
use crate::ui::components::post_form::{FormAction, PostForm};
use crate::ui::components::table::DataTable;
use crate::ui::data::page_data;

#[component]
pub fn UsersPage() -> impl IntoView {
    let set_role = FormAction::new::<SetUserRole>();
    let set_disabled = FormAction::new::<SetUserDisabled>();
    let add = FormAction::new::<AddUser>();
    let reset = FormAction::new::<ResetPassword>();
    let accounts = page_data(
        move || {
            (
                set_role.version().get(),
                set_disabled.version().get(),
                add.version().get(),
                reset.version().get(),
            )
        },
        |_| load_users(),
    );
    let actions = Actions {
        set_role,
        set_disabled,
        add,
        reset,
    };
    view! {
        <Title text="Users" />
        <h1 class="text-2xl font-semibold">"Users"</h1>
        <p class="mt-1 text-sm text-slate-600">"People who sign in to the console. Every change is in the audit. Machine clients call it with "<a class="text-sky-800 underline" href="/api-keys">"API keys"</a>"."</p>
        <div class="mt-4 space-y-2">
            <ActionResult value=move || set_role.value().get() success=|m: &String| m.clone() />
            <ActionResult value=move || set_disabled.value().get() success=|m: &String| m.clone() />
            <OneTimeResult value=Signal::derive(move || add.value().get()) what="password" />
            <OneTimeResult value=Signal::derive(move || reset.value().get()) what="password" />
        </div>
        <AsyncSection load=move || accounts spacing="mt-4" let:view>
            <UsersSections view actions />
        </AsyncSection>
    }
}

/// Every form of the page, so that a change reloads the lists (and their fresh form key).
#[derive(Clone, Copy)]
struct Actions {
    set_role: FormAction<String>,
    set_disabled: FormAction<String>,
    add: FormAction<OneTime>,
    reset: FormAction<OneTime>,
}

#[component]
fn UsersSections(view: UsersView, actions: Actions) -> impl IntoView {
    let UsersView { users, form_key } = view;
    view! {
        <UserTable list=users actions form_key=form_key.clone() />
        <AddUserForm add=actions.add form_key />
    }
}

/// Every user, one row each.
#[component]
fn UserTable(list: Vec<UserSummary>, actions: Actions, form_key: String) -> impl IntoView {
    // Keyed by what a change changes: after a change the row is built anew, so its forms
    // come back empty (an error keeps what was typed).
    view! {
        <h2 class="mt-6 text-lg font-semibold">"People"</h2>
        <DataTable
            label="Users"
            columns=&["Name", "Role", "State", "Last sign-in", "Change"]
            padded=true
            spacing="mt-2"
        >
            <For
                each=move || list.clone()
                key=|u| (u.name.clone(), u.role.as_str(), u.disabled)
                children=move |u| view! { <UserRow u actions form_key=form_key.clone() /> }
            />
        </DataTable>
    }
}

/// A user's role change, with a reason.
#[component]
fn RoleForm(name: String, role: Role, set_role: FormAction<String>) -> impl IntoView {
    let options = Role::ALL
        .into_iter()
        .map(|r| view! { <option value=r.as_str() selected=r == role>{r.as_str()}</option> })
        .collect_view();
    let role_label = format!("Role for {name}");
    let reason_label = format!("Reason for changing {name}'s role");
    view! {
        <PostForm action=set_role attr:class="flex flex-wrap items-center gap-2">
            <input type="hidden" name="name" value=name />
            <select name="role" aria-label=role_label class="rounded border border-slate-300 px-1 py-1">
                {options}
            </select>
            <input name="reason" aria-label=reason_label placeholder="Reason" required class="rounded border border-slate-300 px-2 py-1" />
            <button type="submit" class="rounded border border-slate-300 px-2 py-1 hover:bg-slate-100">
                "Change role"
            </button>
        </PostForm>
    }
}

/// "active" in green, or "disabled" in red.
fn state_pill(disabled: bool) -> AnyView {
    if disabled {
        view! { <span class="rounded-full bg-red-100 px-2 py-0.5 text-xs font-semibold text-red-800">"disabled"</span> }.into_any()
    } else {
        view! { <span class="rounded-full bg-emerald-100 px-2 py-0.5 text-xs font-semibold text-emerald-800">"active"</span> }.into_any()
    }
}

/// A user's password reset: a reason, and a new one-time password shown once.
#[component]
fn ResetForm(name: String, reset: FormAction<OneTime>, form_key: String) -> impl IntoView {
    let label = format!("Reason to reset {name}'s password");
    view! {
        <details class="mt-2">
            <summary class="cursor-pointer text-sky-800">"Reset password…"</summary>
            <PostForm action=reset attr:class="mt-2 flex flex-wrap items-center gap-2">
                <FormKey value=form_key />
                <input type="hidden" name="name" value=name />
                <input name="reason" aria-label=label placeholder="Reason" required class="rounded border border-slate-300 px-2 py-1" />
                <SecretSubmit label="Reset password" />
            </PostForm>
        </details>
    }
}

/// A new user: name and role; the console makes a one-time password.
#[component]
fn AddUserForm(add: FormAction<OneTime>, form_key: String) -> impl IntoView {
    let options = Role::ALL
        .into_iter()
        .map(
            |r| view! { <option value=r.as_str() selected=r == Role::Viewer>{r.as_str()}</option> },
        )
        .collect_view();
    let error = Signal::derive(move || add.value().with(|v| field_error(v, "name")));
    let (invalid, described) = invalid_attrs(error, "new-user-name-error".into());
    view! {
        <details class="mt-4 rounded-lg border border-slate-200 bg-white p-4 text-sm">
            <summary class="cursor-pointer font-medium text-sky-800">"Add a user…"</summary>
            <PostForm action=add attr:class="mt-3 flex flex-wrap items-start gap-3">
                <FormKey value=form_key />
                <div>
                    <label for="new-user-name" class="block">"Name"</label>
                    <input id="new-user-name" name="name" aria-invalid=invalid aria-describedby=described placeholder="e.g. sam.carter" class="mt-1 block rounded border border-slate-300 px-2 py-1 aria-invalid:border-red-500" />
                    <FieldError id="new-user-name-error" message=error />
                </div>
                <div>
                    <label for="new-user-role" class="block">"Role"</label>
                    <select id="new-user-role" name="role" class="mt-1 block rounded border border-slate-300 px-2 py-1">{options}</select>
                </div>
                <div class="mt-6"><SecretSubmit label="Add user" /></div>
                <p class="basis-full text-xs text-slate-500">"A one-time password, shown to you once."</p>
            </PostForm>
        </details>
    }
}

/// A user, and the forms that change their role or disable (enable) them, each with a
/// reason.
#[component]
fn UserRow(u: UserSummary, actions: Actions, form_key: String) -> impl IntoView {
    let Actions {
        set_role,
        set_disabled,
        reset,
        ..
    } = actions;
    let last = match u.last_login_at.clone() {
        Some(iso) => view! { <Moment iso /> }.into_any(),
        None => "never".into_any(),
    };
    let toggle = if u.disabled { "false" } else { "true" };
    let toggle_label = if u.disabled { "Enable" } else { "Disable" };
    let name = u.name.clone();
    let toggle_reason_label = format!("Reason to {} {name}", toggle_label.to_ascii_lowercase());
    let testid = format!("user-{name}");
    let name_for_toggle = name.clone();
    let name_for_reset = name.clone();
    // A disabled user's row looks it: greyed, the state in a red pill.
    let row_class = if u.disabled {
        "border-t border-slate-100 align-top bg-slate-50 text-slate-500"
    } else {
        "border-t border-slate-100 align-top"
    };
    let state = state_pill(u.disabled);
    let toggle_class = if u.disabled {
        "rounded border border-slate-300 px-2 py-1 hover:bg-slate-100"
    } else {
        "rounded border border-red-300 px-2 py-1 text-red-800 hover:bg-red-50"
    };
    view! {
        <tr class=row_class data-testid=testid>
            <td class="py-3 pr-4 font-medium">{u.name.clone()}</td>
            <td class="py-3 pr-4">{u.role.as_str()}</td>
            <td class="py-3 pr-4">{state}</td>
            <td class="py-3 pr-4">{last}</td>
            <td class="py-3 pr-4">
                <RoleForm name=name.clone() role=u.role set_role />
                <PostForm action=set_disabled attr:class="mt-2 flex flex-wrap items-center gap-2">
                    <input type="hidden" name="name" value=name_for_toggle />
                    <input type="hidden" name="disabled" value=toggle />
                    <input name="reason" aria-label=toggle_reason_label placeholder="Reason" required class="rounded border border-slate-300 px-2 py-1" />
                    <button type="submit" class=toggle_class>
                        {toggle_label}
                    </button>
                </PostForm>
                <ResetForm name=name_for_reset reset form_key />
            </td>
        </tr>
    }
}
