//! Everything that runs only on the server.

pub mod cli;
pub mod clock;
pub mod config;
pub mod contract;
pub mod crash_points;
pub mod crypto;
pub mod ctx;
pub mod database;
pub mod deploy;
pub mod domain;
pub mod dynamo_local;
pub mod http;
pub mod ids;
pub mod metrics;
pub mod outbound;
pub mod readiness;
pub mod seed;
pub mod services;
pub mod startup;
pub mod state;
pub mod store;
pub mod telemetry;
