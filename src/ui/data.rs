//! The data a page loads: a resource whose value the server renders into the page (as JSON)
//! and the browser reads back on hydration, or fetches again through its server function.
//!
//! Leptos's default resource codec reads that JSON with `serde_json::from_str`, and server
//! functions read their answers with `serde_json::from_slice`. Both are fine, but each
//! instantiates serde_json's deserializer for every type a page loads, once per reader: two
//! copies of the largest code in the wasm. [`Json`] reads the rendered value with
//! `from_slice` too, so each type's deserializer is compiled once (docs/page-weight.md).

use std::future::Future;

use leptos::prelude::*;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// JSON, written as text and read with the reader the server functions' answers use.
pub struct Json;

impl<T: Serialize> codee::Encoder<T> for Json {
    type Error = serde_json::Error;
    type Encoded = String;

    fn encode(value: &T) -> Result<String, serde_json::Error> {
        serde_json::to_string(value)
    }
}

impl<T: DeserializeOwned> codee::Decoder<T> for Json {
    type Error = serde_json::Error;
    type Encoded = str;

    fn decode(text: &str) -> Result<T, serde_json::Error> {
        serde_json::from_slice(text.as_bytes())
    }
}

/// A page's data (see the module's documentation).
pub type PageData<T> = Resource<T, Json>;

/// Loads `fetcher(source())`, again whenever `source` changes: `Resource::new` with [`Json`].
#[track_caller]
pub fn page_data<T, S, Fut>(
    source: impl Fn() -> S + Send + Sync + 'static,
    fetcher: impl Fn(S) -> Fut + Send + Sync + 'static,
) -> PageData<T>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    S: PartialEq + Clone + Send + Sync + 'static,
    Fut: Future<Output = T> + Send + 'static,
{
    Resource::new_with_options(source, fetcher, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use codee::{Decoder, Encoder};

    #[test]
    fn a_value_reads_back_as_written() {
        let value: Result<Vec<(String, u32)>, String> = Ok(vec![("a \"b\"".into(), 7)]);
        let text = <Json as Encoder<_>>::encode(&value).unwrap();
        let back: Result<Vec<(String, u32)>, String> = <Json as Decoder<_>>::decode(&text).unwrap();
        assert_eq!(back, value);
    }
}
