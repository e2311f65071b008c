use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

/// A plain form post to `/login`: works the same with and without JavaScript.
#[component]
pub fn LoginPage() -> impl IntoView {
    let query = use_query_map();
    let message = move || {
        query.read().get("error").map(|e| match e.as_str() {
            "locked" => "Too many failed attempts. Try again in 15 minutes.",
            "missing" => "Enter your user name and password.",
            "unavailable" => "Sign-in is unavailable right now. Try again shortly.",
            "busy" => "Too many sign-ins at once. Try again in a moment.",
            "slowed" => "Many failed sign-ins came from your network, so its sign-ins are checked one at a time, up to 30 seconds apart. Try again in a few seconds.",
            _ => "Wrong user name or password.",
        })
    };
    let next = move || query.read().get("next").unwrap_or_default();
    view! {
        <Title text="Sign in" />
        <main class="flex min-h-screen items-center justify-center px-4">
            <form method="post" action="/login" class="w-full max-w-sm space-y-4 rounded-lg border border-slate-200 bg-white p-6 shadow-sm">
                <h1 class="text-xl font-semibold">"Sign in to ops-console"</h1>
                {move || {
                    message()
                        .map(|m| {
                            view! {
                                <p role="alert" class="rounded bg-red-50 px-3 py-2 text-sm text-red-800">
                                    {m}
                                </p>
                            }
                        })
                }}
                <div>
                    <label for="name" class="block text-sm font-medium">"User name"</label>
                    <input id="name" name="name" autocomplete="username" required class="mt-1 w-full rounded border border-slate-300 px-2 py-1" />
                </div>
                <div>
                    <label for="password" class="block text-sm font-medium">"Password"</label>
                    <input id="password" name="password" type="password" autocomplete="current-password" required class="mt-1 w-full rounded border border-slate-300 px-2 py-1" />
                </div>
                <input type="hidden" name="next" value=next />
                <button type="submit" class="w-full rounded bg-slate-900 px-4 py-2 font-medium text-white hover:bg-slate-700">
                    "Sign in"
                </button>
            </form>
        </main>
    }
}
