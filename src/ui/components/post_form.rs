//! Forms posted to a server function the way the browser would post them, and the answers
//! they get: what Leptos's `ServerAction` and `ActionForm` do, without their cost in the
//! page's code (docs/page-weight.md, "Forms").
//!
//! `ActionForm` reads a submitted form into the server function's argument type
//! (`serde_qs`), writes that back out as the same form encoding, and runs a `ServerAction`
//! over it: all of it compiled once per server function, a few kilobytes each. A page with
//! six forms carried six copies. [`PostForm`] posts the form's own fields as they are, and
//! [`FormAction`] is generic over the answer only: most forms share one (`String`).
//!
//! Without JavaScript nothing changes: it is a plain `<form method="post">` to the server
//! function's URL, which answers with a redirect back to the page.

use leptos::prelude::*;
use leptos::server::SharedValue;
use leptos::server_fn::ServerFn;
use serde::de::DeserializeOwned;

use crate::model::AppError;
use crate::ui::data::Json;

/// The submissions of one form to one server function, and the latest answer.
pub struct FormAction<O: 'static> {
    url: &'static str,
    /// The fields of the latest submission, as posted.
    input: RwSignal<Option<Vec<(String, String)>>>,
    value: RwSignal<Option<Result<O, AppError>>>,
    version: RwSignal<usize>,
    /// Submissions sent, and the newest of them whose answer is shown: every answer counts
    /// (one action often serves a form per row), but an older answer that arrives after a
    /// newer one is not shown over it.
    #[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
    sent: StoredValue<(usize, usize)>,
}

impl<O> Clone for FormAction<O> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<O> Copy for FormAction<O> {}

/// The refusal by the server function at `path` that the page's address carries after a
/// post without JavaScript, read on the server; in the browser the page brings it
/// ([`FormAction::new`]).
fn refusal(path: &'static str) -> Option<AppError> {
    #[cfg(feature = "ssr")]
    {
        use leptos::server::ServerActionError;
        use leptos::server_fn::error::ServerFnUrlError;
        use_context::<ServerActionError>()
            .filter(|e| e.path() == path)
            .map(|e| ServerFnUrlError::<AppError>::decode_err(e.err()))
    }
    #[cfg(not(feature = "ssr"))]
    {
        let _ = path;
        None
    }
}

impl<O: Send + Sync + 'static> FormAction<O> {
    /// Submissions to the server function `S`. After a post without JavaScript that `S`
    /// refused, the page's address carries the refusal: it is the first answer, on the
    /// server's page and in the browser's alike (as with a `ServerAction`).
    pub fn new<S: ServerFn<Output = O, Error = AppError>>() -> Self {
        // The server reads the refusal from the address; the browser gets it with the page
        // (a `SharedValue`), so the page's code carries no reader of the address's encoding
        // (base64, 1.5 KB on each page with a form; docs/page-weight.md).
        let refused = SharedValue::<Option<AppError>, Json>::new_with_encoding(|| refusal(S::PATH))
            .into_inner()
            .map(Err);
        Self {
            url: S::url(),
            input: RwSignal::new(None),
            value: RwSignal::new(refused),
            version: RwSignal::new(0),
            sent: StoredValue::new((0, 0)),
        }
    }

    /// A count that moves when a submission succeeds. Page data that reloads on it, rather
    /// than on every answer, leaves a refused form as it was typed, next to its error.
    pub fn saved(self) -> Memo<usize> {
        Memo::new(move |last: Option<&usize>| {
            let version = self.version.get();
            if self.value.with(|v| matches!(v, Some(Ok(_)))) {
                version
            } else {
                last.copied().unwrap_or(version)
            }
        })
    }

    /// How many answers have come back (each one a change when it is `Ok`).
    pub fn version(&self) -> RwSignal<usize> {
        self.version
    }

    /// The latest answer, if any.
    pub fn value(&self) -> RwSignal<Option<Result<O, AppError>>> {
        self.value
    }

    /// The value of field `name` in the latest submission from this page (none yet after a
    /// post without JavaScript).
    pub fn submitted(&self, name: &str) -> Option<String> {
        self.input.with(|fields| {
            fields
                .as_ref()?
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        })
    }
}

impl<O: DeserializeOwned + Send + Sync + 'static> FormAction<O> {
    /// Posts `form`, then shows the answer (following a redirect the server asks for).
    /// A form that was answered with success is emptied and folded away (the `<details>`
    /// around it closed); one that was refused stays open as it was typed, its errors
    /// shown next to their fields.
    #[cfg_attr(not(feature = "hydrate"), allow(unused_variables))]
    fn submit(self, form: leptos::web_sys::HtmlFormElement) {
        #[cfg(feature = "hydrate")]
        {
            let Ok((fields, body)) = client::fields(&form) else {
                return;
            };
            let number = self.sent.get_value().0 + 1;
            self.sent.update_value(|(sent, _)| *sent = number);
            self.input.set(Some(fields));
            leptos::task::spawn_local(async move {
                let answer = client::post(self.url, body)
                    .await
                    .and_then(|a| a.decode::<O>());
                if answer.is_ok() {
                    client::done(&form);
                }
                // The page may be gone by now (a click elsewhere while this was on its
                // way): then there is nothing to show it on.
                let Some((_, shown)) = self.sent.try_get_value() else {
                    return;
                };
                if number > shown {
                    self.sent.update_value(|(_, shown)| *shown = number);
                    self.value.try_set(Some(answer));
                }
                self.version.try_update(|n| *n += 1);
            });
        }
    }
}

/// A `<form>` posting to `action`'s server function: by the page's code when it runs,
/// by the browser otherwise. Attributes given with `attr:` go on the `<form>`.
#[component]
pub fn PostForm<O>(action: FormAction<O>, children: Children) -> impl IntoView
where
    O: DeserializeOwned + Send + Sync + 'static,
{
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        if ev.default_prevented() {
            return;
        }
        ev.prevent_default();
        action.submit(event_target::<leptos::web_sys::HtmlFormElement>(&ev));
    };
    view! {
        <form action=action.url method="post" on:submit=on_submit>
            {children()}
        </form>
    }
}

/// The browser's side: not generic, so compiled once.
#[cfg(feature = "hydrate")]
mod client {
    use leptos::prelude::{FromServerFnError, ServerFnErrorErr};
    use leptos::server_fn::redirect::{call_redirect_hook, REDIRECT_HEADER};
    use wasm_bindgen::{JsCast, JsValue};
    use wasm_bindgen_futures::JsFuture;
    use web_sys::{FormData, HtmlFormElement, RequestInit, Response, UrlSearchParams};

    use crate::model::AppError;

    /// After a success: the form empty again (its fields back to what the page gave them)
    /// and the `<details>` it sits in, if any, closed.
    pub fn done(form: &HtmlFormElement) {
        form.reset();
        if let Ok(Some(details)) = form.closest("details") {
            let _ = details.remove_attribute("open");
        }
    }

    /// A server function's answer: its status and body.
    pub struct Answer {
        status: u16,
        body: Vec<u8>,
    }

    impl Answer {
        /// An error status: the server function refused (its body is an `AppError`).
        fn refused(&self) -> bool {
            (400..=599).contains(&self.status)
        }

        /// The answer as the server function's client reads it: an error status carries an
        /// `AppError`, any other the output, both as JSON.
        pub fn decode<O: serde::de::DeserializeOwned>(self) -> Result<O, AppError> {
            if self.refused() {
                Err(AppError::de(self.body.into()))
            } else {
                serde_json::from_slice(&self.body).map_err(|e| {
                    AppError::from_server_fn_error(ServerFnErrorErr::Deserialization(e.to_string()))
                })
            }
        }
    }

    /// The form's fields, as a list and as the body to post.
    pub fn fields(
        form: &HtmlFormElement,
    ) -> Result<(Vec<(String, String)>, UrlSearchParams), JsValue> {
        let data = FormData::new_with_form(form)?;
        let body = UrlSearchParams::new_with_str_sequence_sequence(&data)?;
        let mut fields = Vec::new();
        for entry in js_sys::try_iter(&body)?.into_iter().flatten() {
            let pair = js_sys::Array::from(&entry?);
            let text = |v: JsValue| v.as_string().unwrap_or_default();
            fields.push((text(pair.get(0)), text(pair.get(1))));
        }
        Ok((fields, body))
    }

    /// Posts `body` to `url` as a form, asking for the JSON answer (not the redirect a
    /// form without JavaScript gets).
    pub async fn post(url: &str, body: UrlSearchParams) -> Result<Answer, AppError> {
        let failed = |e: JsValue| {
            AppError::from_server_fn_error(ServerFnErrorErr::Request(
                e.as_string().unwrap_or_else(|| "the request failed".into()),
            ))
        };
        let init = RequestInit::new();
        init.set_method("POST");
        init.set_body(&body);
        let headers = web_sys::Headers::new().map_err(failed)?;
        headers.set("Accept", "application/json").map_err(failed)?;
        init.set_headers(&headers);
        let window = web_sys::window().ok_or_else(|| failed(JsValue::NULL))?;
        let response: Response = JsFuture::from(window.fetch_with_str_and_init(url, &init))
            .await
            .map_err(failed)?
            .unchecked_into();
        // A server function that redirects answers a script with this header and the
        // place in `Location` (a form without JavaScript gets a real redirect).
        let headers = response.headers();
        let redirect = match headers.has(REDIRECT_HEADER) {
            Ok(true) => headers.get("Location").ok().flatten(),
            _ => None,
        };
        let bytes = JsFuture::from(response.array_buffer().map_err(failed)?)
            .await
            .map_err(failed)?;
        let answer = Answer {
            status: response.status(),
            body: js_sys::Uint8Array::new(&bytes).to_vec(),
        };
        // As the server function's client: a refusal is shown where it was made.
        if let Some(location) = redirect.filter(|_| !answer.refused()) {
            call_redirect_hook(&location);
        }
        Ok(answer)
    }
}
