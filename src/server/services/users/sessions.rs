//! Signing in and out, and resolving a session cookie to the signed-in user.

use chrono::{DateTime, Duration, Utc};

use super::Users;
use crate::model::users::{parse_user_name, CurrentUser};
use crate::model::AppError;
use crate::server::crypto::hmac_sha256;
use crate::server::crypto::sha256_hex;
use crate::server::ids::hex;
use crate::server::services::users::passwords::{new_session_id, Permit};
use crate::server::store::users::login_attempts::{self, Reserved, Rule, Turn};
use crate::server::store::users::sessions::{self, SessionItem};
use crate::server::store::users::{self, UserItem};

/// Slide the idle expiry at most this often (a write per request would be waste).
const TOUCH_EVERY: Duration = Duration::minutes(1);

#[derive(Debug, PartialEq, Eq)]
pub enum LoginError {
    /// Wrong name or password, unknown or disabled user: one answer for all.
    Invalid,
    Locked {
        until: DateTime<Utc>,
    },
    /// Every password check this console allows at once is running: try again in a moment.
    Busy,
    /// Many failures came from this address: its next attempt is checked at `until`.
    Slowed {
        until: DateTime<Utc>,
    },
}

/// Where a sign-in comes from: the client's address, when the console knows it.
pub type From = Option<std::net::IpAddr>;

/// One counter an attempt is counted against, and its rule.
struct Counter {
    key: String,
    rule: Rule,
    /// Full, it meters instead of locking: one attempt a turn, the turns further apart each
    /// time (the address's counter: one person's failures must not lock an office out).
    meters: bool,
}

/// The wait before a full address's first turn, and the most it grows to.
const FIRST_TURN: Duration = Duration::seconds(1);
const LONGEST_TURN: Duration = Duration::seconds(30);

/// A counted attempt, to be taken back if it was right.
struct Counted {
    counter: Counter,
    n: u32,
    window_start: i64,
}

/// The address a sign-in is counted under: an IPv4 address as it is (an IPv4-mapped IPv6
/// address as its IPv4 address), an IPv6 address by its /64 (one subscriber, one host,
/// gets a whole /64: counted per address, it would have 2^64 fresh ones).
fn counted_address(ip: std::net::IpAddr) -> std::net::IpAddr {
    use std::net::{IpAddr, Ipv6Addr};
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

impl Users {
    /// The counters a sign-in as `name` from `from` is counted against: the name from that
    /// address (the lockout people see: 5 in 15 minutes), the address across names (20:
    /// past it, the address is slowed, not locked: one check a turn, 1 s after the last and
    /// doubling to 30 s), and the name across addresses (a ceiling for guesses spread over
    /// many addresses, high enough that nobody locks a name out alone). Addresses are kept
    /// as HMACs.
    fn counters(&self, name: &str, from: From) -> [Counter; 3] {
        let window = Duration::minutes(self.auth.lockout_minutes);
        let rule = |limit: u32| Rule { limit, window };
        let address = match from {
            Some(ip) => hex(&hmac_sha256(
                &self.address_key,
                counted_address(ip).to_string().as_bytes(),
            ))[..32]
                .to_string(),
            None => "unknown".to_string(),
        };
        [
            Counter {
                key: format!("pair:{name}|{address}"),
                rule: rule(self.auth.lockout_failures),
                meters: false,
            },
            Counter {
                key: format!("addr:{address}"),
                rule: rule(self.auth.lockout_address_failures),
                meters: true,
            },
            Counter {
                key: format!("name:{name}"),
                rule: rule(self.auth.lockout_name_failures),
                meters: false,
            },
        ]
    }

    /// Checks the password and opens a session. Returns the session id (for the cookie).
    /// The attempt is counted before the password is checked, so concurrent guesses are
    /// checked at most as often as the lockout allows.
    pub async fn login(
        &self,
        name: &str,
        password: &str,
        from: From,
    ) -> Result<Result<(String, CurrentUser), LoginError>, AppError> {
        let now = self.clock.now();
        // Before any I/O: a flood is refused without touching DynamoDB.
        let Some(permit) = self.password_work.try_start() else {
            return Ok(Err(LoginError::Busy));
        };
        // A name no user can have is refused at once: the rules for names are public, so
        // answering fast tells nothing, and a password check for it would be argon2 time
        // that no counter sees.
        let Ok(name) = parse_user_name(name) else {
            drop(permit);
            return Ok(Err(LoginError::Invalid));
        };
        let mut counted = Vec::new();
        let mut metered = None;
        for counter in self.counters(&name, from) {
            match login_attempts::reserve(&self.store, &counter.key, counter.rule, now).await? {
                Reserved::Counted { n, window_start } => counted.push(Counted {
                    counter,
                    n,
                    window_start,
                }),
                Reserved::Locked { .. } if counter.meters => metered = Some(counter),
                Reserved::Locked { until } => {
                    self.release(&counted).await?;
                    return Ok(Err(LoginError::Locked { until }));
                }
            }
        }
        // Past the address's limit: checked only in its turn.
        if let Some(counter) = metered {
            let turn =
                login_attempts::take_turn(&self.store, &counter.key, FIRST_TURN, LONGEST_TURN, now)
                    .await?;
            if let Turn::Wait { until } = turn {
                self.release(&counted).await?;
                return Ok(Err(LoginError::Slowed { until }));
            }
        }
        let Some(user) = self.check_password(&name, password, now, permit).await? else {
            return Ok(Err(self.count_failure(&counted, now).await?));
        };
        self.release(&counted).await?;
        let id = self.open_session(&user, now).await?;
        tracing::info!(user = %user.name, "signed in");
        Ok(Ok((
            id,
            CurrentUser {
                name: user.name,
                role: user.role,
            },
        )))
    }

    /// Takes back attempts that were right (or not checked).
    async fn release(&self, counted: &[Counted]) -> Result<(), AppError> {
        for c in counted {
            login_attempts::release(&self.store, &c.counter.key, c.window_start).await?;
        }
        Ok(())
    }

    /// The user, if `password` is theirs and they may sign in. An unknown name costs the
    /// same time as a wrong password.
    async fn check_password(
        &self,
        name: &str,
        password: &str,
        now: DateTime<Utc>,
        permit: Permit,
    ) -> Result<Option<UserItem>, AppError> {
        let user = users::get(&self.store, name, now).await?;
        let phc = user.as_ref().map(|u| u.password_hash.clone());
        let ok = permit.verify(password, phc).await;
        Ok(user.filter(|u| ok && !u.disabled))
    }

    /// A wrong password: its counted attempts stand, and each counter it filled locks for
    /// its window.
    async fn count_failure(
        &self,
        counted: &[Counted],
        now: DateTime<Utc>,
    ) -> Result<LoginError, AppError> {
        let mut locked: Option<DateTime<Utc>> = None;
        // A full address meters (it is never counted past its limit, so never locked).
        for c in counted
            .iter()
            .filter(|c| c.n >= c.counter.rule.limit && !c.counter.meters)
        {
            let until = now + c.counter.rule.window;
            let expires = (until + c.counter.rule.window).timestamp();
            login_attempts::lock(&self.store, &c.counter.key, until, expires).await?;
            locked = Some(locked.map_or(until, |l| l.max(until)));
        }
        Ok(match locked {
            Some(until) => {
                tracing::warn!("sign-in locked after repeated failures");
                LoginError::Locked { until }
            }
            None => LoginError::Invalid,
        })
    }

    /// Opens a session for `user` and records the sign-in, which keeps the account alive
    /// for another inactivity lifetime. Returns the session id; only its hash is stored.
    async fn open_session(&self, user: &UserItem, now: DateTime<Utc>) -> Result<String, AppError> {
        let id = new_session_id();
        let absolute = (now + Duration::days(self.auth.session_absolute_days)).timestamp();
        let item = SessionItem {
            id_hash: sha256_hex(id.as_bytes()),
            user: user.name.clone(),
            created_at: now,
            last_seen_at: now,
            absolute_expires_at: absolute,
            expires_at: (now + Duration::hours(self.auth.session_idle_hours))
                .timestamp()
                .min(absolute),
        };
        sessions::create(&self.store, &item, now).await?;
        let alive_until = (now + Duration::days(self.ttls.user_inactive_days)).timestamp();
        users::record_login(&self.store, &user.name, now, alive_until).await?;
        Ok(id)
    }

    /// The user behind a session id, if the session and the user are both still valid.
    pub async fn resolve_session(&self, session_id: &str) -> Result<Option<CurrentUser>, AppError> {
        if session_id.len() != 64 || !session_id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(None);
        }
        let now = self.clock.now();
        let id_hash = sha256_hex(session_id.as_bytes());
        let Some(session) = sessions::get(&self.store, &id_hash, now).await? else {
            return Ok(None);
        };
        let Some(user) = users::get(&self.store, &session.user, now).await? else {
            return Ok(None);
        };
        // Disabled, or the password changed since this session began: the session is over.
        if user.disabled || user.password_changed_at > session.created_at {
            sessions::delete(&self.store, &id_hash).await?;
            return Ok(None);
        }
        if now - session.last_seen_at >= TOUCH_EVERY {
            let idle = (now + Duration::hours(self.auth.session_idle_hours)).timestamp();
            let expires = idle.min(session.absolute_expires_at);
            sessions::touch(&self.store, &id_hash, now, expires).await?;
        }
        Ok(Some(CurrentUser {
            name: user.name,
            role: user.role,
        }))
    }

    pub async fn logout(&self, session_id: &str) -> Result<(), AppError> {
        sessions::delete(&self.store, &sha256_hex(session_id.as_bytes())).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::counted_address;

    #[test]
    fn an_ipv6_client_is_counted_by_its_64_and_a_mapped_ipv4_as_itself() {
        let a = counted_address("2001:db8:1:2:aaaa::1".parse().unwrap());
        let b = counted_address("2001:db8:1:2:ffff:ffff:ffff:ffff".parse().unwrap());
        assert_eq!(a, b, "one /64, one counter");
        assert_ne!(a, counted_address("2001:db8:1:3::1".parse().unwrap()));
        assert_eq!(
            counted_address("::ffff:203.0.113.9".parse().unwrap()),
            counted_address("203.0.113.9".parse().unwrap())
        );
        assert_ne!(
            counted_address("203.0.113.9".parse().unwrap()),
            counted_address("203.0.113.10".parse().unwrap())
        );
    }
}
