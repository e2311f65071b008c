use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::model::users::CurrentUser;
use crate::model::AppError;

/// What the layout needs on every page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShellInfo {
    /// `dev`, `staging` or `prod`.
    pub environment: String,
    pub user: Option<CurrentUser>,
    /// The banner every page shows while automation may act: one line per switch out of
    /// its safe position, or put in it by a trip or a trigger URL until a person changes
    /// it (signed-in users only; empty when they could not be read).
    pub live_switches: Vec<LiveSwitch>,
    /// The switches' version as this read found it (signed-in users only): a page that
    /// shows the switches reads them again when it moves (someone else changed them).
    #[serde(default)]
    pub switches_version: Option<u64>,
}

impl ShellInfo {
    /// The switches' version of a frame's read, when it had one.
    pub fn version_of(read: Option<Result<ShellInfo, AppError>>) -> Option<u64> {
        read.and_then(|r| r.ok()).and_then(|i| i.switches_version)
    }
}

/// A kill switch out of its safe position, as the banner says it (text made on the server,
/// so the page's code carries no date parsing for it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LiveSwitch {
    /// "Safe mode is off", "Automation is on", or what tripped it ("Safe mode was turned
    /// on by a trip").
    pub what: String,
    pub by: String,
    /// `YYYY-MM-DD HH:MM UTC`, or empty.
    pub when: String,
    pub why: Option<String>,
    /// A timed change: when it ends (RFC 3339) and the time left in words ("1 h 59 min
    /// left"), made on the server at each read (every 5 s with JavaScript).
    #[serde(default)]
    pub ends: Option<(String, String)>,
}

#[server]
pub async fn load_shell_info() -> Result<ShellInfo, AppError> {
    use crate::server::ctx;
    let state = ctx::state()?;
    let user = ctx::current_user();
    // A page still renders when DynamoDB does not answer: the banner is left out then.
    let switches = match user {
        Some(_) => state.kill_switches.load().await.ok(),
        None => None,
    };
    Ok(ShellInfo {
        environment: state.config.env.to_string(),
        user,
        live_switches: switches
            .as_ref()
            .map(|s| live(s, state.clock.now()))
            .unwrap_or_default(),
        switches_version: switches.map(|s| s.version),
    })
}

/// The switches out of their safe position (safe mode off, automation on), and those a
/// trip or a trigger URL put in it.
#[cfg(feature = "ssr")]
fn live(
    s: &crate::model::kill_switches::KillSwitches,
    now: chrono::DateTime<chrono::Utc>,
) -> Vec<LiveSwitch> {
    use crate::model::kill_switches::Switch;
    use crate::server::domain::kill_switches::timers::left;
    use crate::server::domain::kill_switches::tripped_by;
    let line = |what: &str, st: &crate::model::kill_switches::SwitchState| LiveSwitch {
        what: what.to_string(),
        by: st.changed_by.clone().unwrap_or_else(|| "nobody yet".into()),
        when: st.changed_at.clone().unwrap_or_default(),
        why: st.reason.clone().filter(|r| !r.is_empty()),
        ends: st
            .ends_at
            .as_deref()
            .map(|end| (end.to_string(), left(end, now))),
    };
    let tripped = |switch: Switch| {
        let state = s.get(switch);
        tripped_by(switch, state).map(|by| {
            let to = if switch.safe() { "on" } else { "off" };
            line(
                &format!("{} was turned {to} by {by}", switch.label()),
                state,
            )
        })
    };
    [
        (!s.safe_mode.enabled).then(|| line("Safe mode is off", &s.safe_mode)),
        s.automation_enabled
            .enabled
            .then(|| line("Automation is on", &s.automation_enabled)),
        tripped(Switch::SafeMode),
        tripped(Switch::AutomationEnabled),
    ]
    .into_iter()
    .flatten()
    .collect()
}
