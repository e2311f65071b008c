#[cfg(feature = "ssr")]
#[tokio::main]
async fn main() -> std::process::ExitCode {
    ops_console::server::telemetry::init();
    ops_console::server::cli::run(std::env::args().skip(1).collect()).await
}

#[cfg(not(feature = "ssr"))]
fn main() {
    // The browser build has no entry point here: see `hydrate()` in lib.rs.
}
