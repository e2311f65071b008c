//! The `[auth]` section: sessions, the sign-in's counters, and who is believed about the
//! client's address (docs/security.md, "Signing in").

use serde::{Deserialize, Serialize};

/// Sessions and signing in.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthSection {
    pub session_idle_hours: i64,
    pub session_absolute_days: i64,
    /// Failed sign-ins of one name from one address that lock it (for that address).
    pub lockout_failures: u32,
    pub lockout_minutes: i64,
    /// Failed sign-ins from one address, across names, past which its sign-ins are slowed
    /// (one check a turn, never locked).
    pub lockout_address_failures: u32,
    /// Failed sign-ins of one name from any address that lock the name everywhere.
    pub lockout_name_failures: u32,
    /// Proxies (comma-separated CIDRs, such as the load balancer's subnets) whose
    /// `X-Forwarded-For` names the client; `none`: clients connect directly, their
    /// connection's address counts. Must be set outside `dev`: behind a load balancer
    /// left unset, every client would share the balancer's address, and 20 wrong
    /// passwords from anyone would lock every sign-in.
    pub trusted_proxies: String,
    /// Password checks one console runs at once (each on a blocking thread); past this a
    /// sign-in is refused at once. 0: half the machine's cores.
    pub password_checks_at_once: u32,
    /// Searches by a typed phone number, email or id one person may make within
    /// `lookups_minutes` (every console's, counted in DynamoDB); past it they are refused
    /// until the window ends.
    pub lookups_limit: u32,
    pub lookups_minutes: i64,
    /// The lookup of a window that names the person in an audit record (once a window).
    pub lookups_audit_after: u32,
}

impl AuthSection {
    /// The trusted proxies as a list of CIDRs (`none` and empty: no proxy).
    pub fn proxies(&self) -> &str {
        let p = self.trusted_proxies.trim();
        if p.eq_ignore_ascii_case("none") {
            ""
        } else {
            p
        }
    }
}

impl Default for AuthSection {
    fn default() -> Self {
        AuthSection {
            session_idle_hours: 8,
            session_absolute_days: 7,
            lockout_failures: 5,
            lockout_minutes: 15,
            lockout_address_failures: 20,
            lockout_name_failures: 50,
            trusted_proxies: String::new(),
            password_checks_at_once: 0,
            lookups_limit: 120,
            lookups_minutes: 60,
            lookups_audit_after: 30,
        }
    }
}
