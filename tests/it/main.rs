//! Integration tests: the real router against a real DynamoDB Local (one JVM per test run,
//! a fresh table prefix per test).

mod accounts;
mod alerts;
mod bootstrap;
mod conversation_search;
mod conversations;
mod dynamodb_semantics;
mod events;
mod helpers;
mod idempotency;
mod inbox;
mod kill_switches;
mod limits;
mod measurements;
mod operations;
mod outbox;
mod receiver;
mod replay;
mod security;

/// Every test runs on one multi-thread runtime, as the product does, not on a runtime of
/// its own (`#[tokio::test(crate = "crate::rt")]`): with a runtime per test, work a test
/// left on another test's runtime (a connection, a page's pending task) stalls when that
/// runtime stops, and a page render waited for ever (seen in 3 of 4 full runs). Each test
/// still runs on its own thread, which drives its body (`Runtime::block_on` may be called
/// from several threads at once).
pub mod rt {
    pub use tokio::pin;

    pub mod runtime {
        use std::future::Future;
        use std::sync::OnceLock;

        fn shared() -> &'static tokio::runtime::Runtime {
            static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
            RUNTIME.get_or_init(|| {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(4)
                    .enable_all()
                    .build()
                    .expect("the tests' runtime starts")
            })
        }

        /// What `#[tokio::test]` builds: here, a handle on the shared runtime.
        pub struct Builder;

        impl Builder {
            pub fn new_current_thread() -> Builder {
                Builder
            }

            pub fn enable_all(self) -> Builder {
                self
            }

            pub fn build(self) -> std::io::Result<Shared> {
                Ok(Shared)
            }
        }

        pub struct Shared;

        impl Shared {
            pub fn block_on<F: Future>(&self, body: F) -> F::Output {
                shared().block_on(body)
            }
        }
    }
}
