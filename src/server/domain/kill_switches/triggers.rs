//! Trigger URLs (docs/switches.md, "Trigger URLs"): what a call to one asks for. An outside
//! monitor posts to a switch's secret URL when something is wrong; Prometheus Alertmanager
//! posts its webhook payload, firing or resolved. A call only ever moves the switch towards
//! safety; a resolved alert changes nothing (a person turns safety off again).

use serde_json::Value;

use crate::model::AppError;

/// Who a change made through a trigger URL is recorded as.
pub const ACTOR: &str = "trigger";
/// A trigger's secret: `kst_` and 64 hex digits. Anything else is no trigger's.
pub const SECRET_PREFIX: &str = "kst_";
pub const SECRET_LEN: usize = 4 + 64;

/// What a call asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// False: Alertmanager says the alert resolved.
    pub firing: bool,
    /// The alert's name when the payload gives one (letters, digits, `_ . : -`, at most 64),
    /// else "a monitor". Nothing else of the payload is kept: labels and annotations may
    /// hold anything.
    pub source: String,
    /// Alertmanager's firing episode: its `groupKey` and the earliest `startsAt` of the
    /// firing alerts, hashed. Alertmanager sends a firing group again (its repeat
    /// interval, a retry); one episode moves a switch once, so a person who turns safety
    /// off while the alert still fires is not overruled by the next repeat. None: any
    /// other monitor, each call of which acts.
    pub episode: Option<String>,
}

impl Call {
    /// The reason the change is recorded with.
    pub fn reason(&self) -> String {
        format!("trigger URL: {} firing", self.source)
    }
}

/// Reads a call's body: empty (any monitor), or JSON (Alertmanager's webhook payload, or
/// any object). Not JSON: a 400.
pub fn read(body: &[u8]) -> Result<Call, AppError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Call {
            firing: true,
            source: "a monitor".into(),
            episode: None,
        });
    }
    let v: Value = serde_json::from_slice(body).map_err(|_| {
        AppError::invalid(
            "body",
            "The body is empty or JSON (Alertmanager's webhook payload).",
        )
    })?;
    let firing = v.get("status").and_then(Value::as_str) != Some("resolved");
    let name = ["commonLabels", "groupLabels"]
        .iter()
        .find_map(|k| v.get(*k)?.get("alertname")?.as_str())
        .filter(|n| {
            !n.is_empty()
                && n.len() <= 64
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'))
        });
    Ok(Call {
        firing,
        source: match name {
            Some(n) => format!("Alertmanager alert {n}"),
            None => "a monitor".into(),
        },
        episode: firing.then(|| episode(&v)).flatten(),
    })
}

/// The firing episode of an Alertmanager payload (see [`Call::episode`]).
fn episode(v: &Value) -> Option<String> {
    let group = v.get("groupKey")?.as_str()?;
    let started = v
        .get("alerts")?
        .as_array()?
        .iter()
        .filter(|a| a.get("status").and_then(Value::as_str) != Some("resolved"))
        .filter_map(|a| a.get("startsAt")?.as_str())
        .min()?;
    Some(crate::server::crypto::sha256_hex(
        format!("{group}\n{started}").as_bytes(),
    ))
}

/// Whether `given` has the shape of a trigger's secret (checked before any read).
pub fn well_formed(given: &str) -> bool {
    given.len() == SECRET_LEN
        && given.starts_with(SECRET_PREFIX)
        && given[SECRET_PREFIX.len()..]
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_alertmanager_payload_names_its_alert_and_says_firing_or_resolved() {
        let firing = br#"{"version":"4","status":"firing","receiver":"ops",
            "groupLabels":{"alertname":"HighErrorRate"},
            "commonLabels":{"alertname":"HighErrorRate","customer":"jane@example.com"},
            "alerts":[{"status":"firing","labels":{"alertname":"HighErrorRate"}}]}"#;
        let c = read(firing).unwrap();
        assert_eq!(
            c,
            Call {
                firing: true,
                source: "Alertmanager alert HighErrorRate".into(),
                episode: None,
            }
        );
        // With its group and start, a firing payload names its episode: the same for a
        // repeat, another once the alert fired again.
        let at = |t: &str| {
            format!(
                r#"{{"status":"firing","groupKey":"{{}}:{{alertname=\"X\"}}",
                "alerts":[{{"status":"firing","startsAt":"{t}"}},
                          {{"status":"firing","startsAt":"2026-11-27T09:00:00Z"}}]}}"#
            )
        };
        let first = read(at("2026-11-27T08:00:00Z").as_bytes()).unwrap().episode;
        assert!(first.is_some());
        assert_eq!(
            read(at("2026-11-27T08:00:00Z").as_bytes()).unwrap().episode,
            first
        );
        assert_ne!(
            read(at("2026-11-27T08:30:00Z").as_bytes()).unwrap().episode,
            first
        );
        assert_eq!(
            c.reason(),
            "trigger URL: Alertmanager alert HighErrorRate firing"
        );
        let resolved = br#"{"status":"resolved","commonLabels":{"alertname":"HighErrorRate"}}"#;
        assert!(!read(resolved).unwrap().firing);
    }

    #[test]
    fn anything_else_is_a_monitor_and_keeps_nothing_of_the_payload() {
        assert_eq!(read(b"").unwrap().source, "a monitor");
        assert_eq!(read(b"  \n").unwrap().source, "a monitor");
        for odd in [
            br#"{"commonLabels":{"alertname":"call +44 7700 900123 <b>"}}"#.as_slice(),
            br#"{"commonLabels":{"alertname":42}}"#,
            br#"[1,2]"#,
        ] {
            let c = read(odd).unwrap();
            assert_eq!(c.source, "a monitor", "{}", String::from_utf8_lossy(odd));
            assert!(c.firing);
        }
        assert_eq!(read(b"fire!").unwrap_err().field(), Some("body"));
    }

    #[test]
    fn a_secret_has_one_shape() {
        let good = format!("kst_{}", "a1".repeat(32));
        assert!(well_formed(&good));
        for bad in [
            String::new(),
            "kst_".into(),
            format!("kst_{}", "A1".repeat(32)),
            format!("kst_{}", "a1".repeat(33)),
            format!("kss_{}", "a1".repeat(32)),
            format!("kst_{}é", "a1".repeat(31)),
        ] {
            assert!(!well_formed(&bad), "{bad}");
        }
    }
}
