//! Where the console's own requests may go (the receiver, its test message, the alert
//! webhook, Slack): the public internet, and the networks a team lists for its own
//! receiver (`operations.outbound_allowed_networks`, empty by default). Everything else is
//! refused: loopback, unspecified, private, carrier-grade NAT, link-local (the cloud's
//! instance metadata address), multicast, reserved, IPv6 unique-local and link-local, and
//! any of these written inside an IPv6 address (IPv4-mapped, IPv4-compatible, NAT64,
//! 6to4). The check runs on the addresses a connection is made to, after DNS, so a name
//! that resolves elsewhere the second time (DNS rebinding) is caught where it connects.

use std::fmt;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::str::FromStr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::client::legacy::connect::dns::Name;

/// One network: an address and a prefix length (`10.0.0.0/8`, `fd00::/8`, `192.0.2.7`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Network {
    addr: IpAddr,
    prefix: u8,
}

impl FromStr for Network {
    type Err = String;

    fn from_str(text: &str) -> Result<Network, String> {
        let text = text.trim();
        let (addr, prefix) = match text.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (text, None),
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| format!("\"{text}\" is not an address or a network (CIDR)"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("\"{text}\": the prefix length is 0 to {max}"))?,
        };
        Ok(Network { addr, prefix })
    }
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

impl Network {
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                prefix_eq(&net.octets(), &ip.octets(), self.prefix)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                prefix_eq(&net.octets(), &ip.octets(), self.prefix)
            }
            _ => false,
        }
    }
}

fn prefix_eq(a: &[u8], b: &[u8], bits: u8) -> bool {
    let (whole, rest) = ((bits / 8) as usize, bits % 8);
    if a[..whole] != b[..whole] {
        return false;
    }
    rest == 0 || (a[whole] ^ b[whole]) >> (8 - rest) == 0
}

/// A list of networks: those outside the public internet that requests may still go to,
/// or the proxies whose `X-Forwarded-For` is believed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Networks(Vec<Network>);

impl Networks {
    /// A comma-separated list of networks (`10.1.0.0/16, fd00::/8`); empty: none.
    pub fn parse(list: &str) -> Result<Networks, String> {
        list.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(Network::from_str)
            .collect::<Result<Vec<_>, _>>()
            .map(Networks)
    }

    /// Whether one of the networks holds `ip` (or the IPv4 address it carries).
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.0
            .iter()
            .any(|n| n.contains(ip) || n.contains(unwrapped(ip)))
    }

    /// Why a request may not go to `ip`, if it may not: it is not on the public internet,
    /// and none of these networks holds it.
    pub fn refusal(&self, ip: IpAddr) -> Option<Refused> {
        let class = class(ip)?;
        (!self.contains(ip)).then_some(Refused { class })
    }
}

/// A refused destination, by the kind of address it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refused {
    pub class: &'static str,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "it leads to a {} address, which the console does not send to \
             (operations.outbound_allowed_networks lists the networks it may)",
            self.class
        )
    }
}

impl std::error::Error for Refused {}

/// The IPv4 address an IPv6 address carries (IPv4-mapped, IPv4-compatible, NAT64's
/// well-known prefix, 6to4), or the address itself.
fn unwrapped(ip: IpAddr) -> IpAddr {
    let IpAddr::V6(v6) = ip else {
        return ip;
    };
    let o = v6.octets();
    let v4 = |b: &[u8]| IpAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3]));
    let seg = v6.segments();
    if let Some(v4) = v6.to_ipv4_mapped() {
        return IpAddr::V4(v4);
    }
    // ::a.b.c.d (but :: and ::1 themselves)
    if seg[..6] == [0; 6] && !(seg[6] == 0 && seg[7] <= 1) {
        return v4(&o[12..]);
    }
    // 64:ff9b::a.b.c.d
    if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return v4(&o[12..]);
    }
    // 2002:a.b.c.d::/48
    if seg[0] == 0x2002 {
        return v4(&o[2..6]);
    }
    ip
}

/// The kind of a non-public address; `None` for the public internet.
pub fn class(ip: IpAddr) -> Option<&'static str> {
    match unwrapped(ip) {
        IpAddr::V4(v4) => class_v4(v4),
        IpAddr::V6(v6) => class_v6(v6),
    }
}

fn class_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b) {
        (0, _) => "unspecified",
        (127, _) => "loopback",
        (10, _) | (192, 168) => "private",
        (172, 16..=31) => "private",
        (100, 64..=127) => "carrier-grade NAT",
        (169, 254) => "link-local",
        (224..=239, _) => "multicast",
        (240..=255, _) => "reserved",
        (192, 0) if c == 0 || c == 2 => "reserved",
        (198, 18..=19) => "reserved",
        (198, 51) if c == 100 => "reserved",
        (203, 0) if c == 113 => "reserved",
        _ => return None,
    })
}

fn class_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    Some(if ip.is_unspecified() {
        "unspecified"
    } else if ip.is_loopback() {
        "loopback"
    } else if s[0] & 0xfe00 == 0xfc00 {
        "unique-local"
    } else if s[0] & 0xffc0 == 0xfe80 || s[0] & 0xffc0 == 0xfec0 {
        "link-local"
    } else if s[0] & 0xff00 == 0xff00 {
        "multicast"
    } else if s[0] & 0xe000 != 0x2000 {
        // Outside global unicast (2000::/3): IPv4-translated (::ffff:0:0:0/96), NAT64's
        // local-use prefix (64:ff9b:1::/48), discard-only (100::/64) and whatever else
        // IANA has not given out.
        "reserved"
    } else if s[0] == 0x2001 && (s[1] < 0x0200 || s[1] == 0x0db8) {
        // 2001::/23, the IETF's protocol assignments (Teredo 2001::/32 among them), and
        // the documentation range 2001:db8::/32.
        "reserved"
    } else if s[0] == 0x3fff && s[1] < 0x1000 {
        // 3fff::/20: documentation (RFC 9637).
        "reserved"
    } else {
        return None;
    })
}

/// The literal address a URL host names (`10.0.0.1`, `[::1]`), if it is one.
pub fn literal(host: &str) -> Option<IpAddr> {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()
}

/// The name resolver of every outbound connection: the addresses of a name, less the
/// refused ones; none left is an error that names why.
#[derive(Clone, Debug, Default)]
pub struct Resolver {
    allowed: Arc<Networks>,
}

impl Resolver {
    pub fn new(allowed: Networks) -> Resolver {
        Resolver {
            allowed: Arc::new(allowed),
        }
    }

    /// The resolver the settings describe (checked at start-up).
    pub fn of_settings(ops: &crate::server::config::OperationsSection) -> Resolver {
        Resolver::new(Networks::parse(&ops.outbound_allowed_networks).unwrap_or_default())
    }

    pub fn allowed(&self) -> &Networks {
        &self.allowed
    }

    /// The addresses of `host` a request may go to.
    pub async fn resolve(&self, host: &str) -> std::io::Result<Vec<SocketAddr>> {
        let found: Vec<SocketAddr> = tokio::net::lookup_host((host, 0)).await?.collect();
        let mut refused = None;
        let usable: Vec<SocketAddr> = found
            .into_iter()
            .filter(|a| match self.allowed.refusal(a.ip()) {
                Some(r) => {
                    refused = Some(r);
                    false
                }
                None => true,
            })
            .collect();
        match (usable.is_empty(), refused) {
            (true, Some(r)) => Err(std::io::Error::new(std::io::ErrorKind::PermissionDenied, r)),
            _ => Ok(usable),
        }
    }

    /// Whether a URL's host may be sent to, as far as can be told now: a literal address
    /// is checked; a name is resolved (for at most `within`) and refused when any address
    /// it has now is refused. A name that does not resolve now passes: the connection
    /// checks again.
    pub async fn check_host(&self, host: &str, within: Duration) -> Result<(), Refused> {
        if let Some(ip) = literal(host) {
            return self.allowed.refusal(ip).map_or(Ok(()), Err);
        }
        let found = tokio::time::timeout(within, tokio::net::lookup_host((host, 0))).await;
        let Ok(Ok(addrs)) = found else {
            return Ok(());
        };
        for a in addrs {
            if let Some(r) = self.allowed.refusal(a.ip()) {
                return Err(r);
            }
        }
        Ok(())
    }
}

type Resolving =
    Pin<Box<dyn Future<Output = std::io::Result<std::vec::IntoIter<SocketAddr>>> + Send>>;

impl tower::Service<Name> for Resolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = std::io::Error;
    type Future = Resolving;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let me = self.clone();
        Box::pin(async move { Ok(me.resolve(name.as_str()).await?.into_iter()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> Option<&'static str> {
        Networks::default()
            .refusal(text.parse().unwrap())
            .map(|r| r.class)
    }

    #[test]
    fn every_non_public_family_is_refused() {
        for (addr, class) in [
            ("0.0.0.0", "unspecified"),
            ("127.0.0.1", "loopback"),
            ("127.255.0.9", "loopback"),
            ("10.1.2.3", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("100.64.0.1", "carrier-grade NAT"),
            ("100.127.255.254", "carrier-grade NAT"),
            ("169.254.169.254", "link-local"),
            ("224.0.0.1", "multicast"),
            ("255.255.255.255", "reserved"),
            ("::", "unspecified"),
            ("::1", "loopback"),
            ("fc00::1", "unique-local"),
            ("fd12:3456::1", "unique-local"),
            ("fe80::1", "link-local"),
            ("ff02::1", "multicast"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:169.254.169.254", "link-local"),
            ("::ffff:10.0.0.1", "private"),
            ("::127.0.0.1", "loopback"),
            ("64:ff9b::a9fe:a9fe", "link-local"),
            ("2002:7f00:1::", "loopback"),
            // Only global unicast (2000::/3) less its special ranges is public.
            ("::ffff:0:7f00:1", "reserved"),
            ("::ffff:0:a9fe:a9fe", "reserved"),
            ("64:ff9b:1::7f00:1", "reserved"),
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "reserved"),
            ("2001:2::1", "reserved"),
            ("2001:db8::1", "reserved"),
            ("3fff::1", "reserved"),
            ("100::1", "reserved"),
            ("5f00::1", "reserved"),
            ("4000::1", "reserved"),
        ] {
            assert_eq!(refused(addr), Some(class), "{addr}");
        }
        for public in [
            "93.184.216.34",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "2a00:1450:4001:830::200e",
            "2001:4860:4860::8888",
            "64:ff9b::808:808",
            "8.8.8.8",
        ] {
            assert_eq!(refused(public), None, "{public}");
        }
    }

    #[test]
    fn a_listed_network_is_allowed_and_nothing_else() {
        let allowed = Networks::parse(" 10.20.0.0/16 , fd00::/8,127.0.0.1").unwrap();
        assert_eq!(allowed.refusal("10.20.3.4".parse().unwrap()), None);
        assert_eq!(allowed.refusal("::ffff:10.20.3.4".parse().unwrap()), None);
        assert!(allowed.refusal("10.21.0.1".parse().unwrap()).is_some());
        assert_eq!(allowed.refusal("fd00::5".parse().unwrap()), None);
        assert_eq!(allowed.refusal("127.0.0.1".parse().unwrap()), None);
        assert!(allowed.refusal("127.0.0.2".parse().unwrap()).is_some());
        assert!(Networks::parse("10.0.0.0/33").is_err());
        assert!(Networks::parse("ten").is_err());
        assert_eq!(Networks::parse("").unwrap(), Networks::default());
    }

    #[test]
    fn literal_hosts_are_read_as_urls_write_them() {
        assert_eq!(literal("[::1]"), Some("::1".parse().unwrap()));
        assert_eq!(
            literal("169.254.169.254"),
            Some("169.254.169.254".parse().unwrap())
        );
        assert_eq!(literal("example.com"), None);
    }

    #[tokio::test]
    async fn a_name_that_resolves_to_a_refused_address_is_refused() {
        let r = Resolver::default();
        let err = r.resolve("localhost").await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied);
        assert!(r
            .check_host("localhost", Duration::from_secs(30))
            .await
            .is_err());
        let open = Resolver::new(Networks::parse("127.0.0.0/8, ::1").unwrap());
        assert!(!open.resolve("localhost").await.unwrap().is_empty());
        assert!(open
            .check_host("localhost", Duration::from_secs(30))
            .await
            .is_ok());
    }
}
