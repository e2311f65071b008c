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
    })
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
                source: "Alertmanager alert HighErrorRate".into()
            }
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
