#[cfg(feature = "ssr")]
#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Only the server exports traces (no command, or `serve`); a tool's run is not one.
    let serving = args.first().is_none_or(|a| a == "serve");
    ops_console::server::telemetry::init(serving);
    ops_console::server::cli::run(args).await
}

#[cfg(not(feature = "ssr"))]
fn main() {
    // The browser build has no entry point here: see `hydrate()` in lib.rs.
}
