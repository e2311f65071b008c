//! Integration tests: the real router against a real DynamoDB Local (one JVM per test run,
//! a fresh table prefix per test).

// Unicode case mapping is kept out of the browser's code only (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod alerts;
mod attacks;
mod aws_failures;
mod bootstrap;
mod breaker;
mod conversation_search;
mod conversations;
mod due_index;
mod dynamodb_semantics;
mod events;
mod helpers;
mod idempotency;
mod idempotency_writes;
mod inbox;
mod kill_switch_approvals;
mod kill_switch_schedule;
mod kill_switch_timers;
mod kill_switch_triggers;
mod kill_switches;
mod limits;
mod lookups;
mod measurements;
mod operations;
mod outbox;
mod rate;
mod receiver;
mod receiver_rest;
mod receivers;
mod replay;
mod resend;
mod security;
mod slots;
mod traces;
mod users;
