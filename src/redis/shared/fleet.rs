//! The fleet guard's Redis side: each readiness round, a process publishes where it stands
//! and reads where the others stand, in one round trip.
//!
//! The members are one hash, `<prefix>fleet`: a field per process id, its value
//! `<ms> <fingerprint> <standing>` where `<ms>` is Redis's clock when it was written,
//! `<fingerprint>` the configuration's that wrote it (the shared entry's, [`Fingerprint`]) and
//! `<standing>` is `ready`, `local`, `returning` or `shared <cause>`. One script writes this process's
//! field, drops the fields older than the members' expiry, and returns the rest: one clock
//! (Redis's) for every member, so that the hosts' clocks never decide who counts, and no
//! `KEYS`/`SCAN` over a key per member. The hash itself expires when no process has written
//! it for as long.
//!
//! # One fleet per configuration
//!
//! A process counts only the members of its own configuration. A standing is judged by the
//! configuration that wrote it (which databases are critical, which components are shared),
//! so another configuration's `ready` may be ready only because a database failing here is
//! optional there: counting it would let another configuration's criticality decide for this
//! one, where the entry's rule is that each process's own decides. Another application
//! under the same prefix (the default prefix is everyone's) is left out the same way.
//!
//! The fingerprint is in the value, in one hash that every configuration under the prefix
//! shares, rather than in the key (a hash per configuration): either way a process counts
//! its own configuration alone, but only one hash lets it see the others, and say so with
//! one warning. During a rolling deploy that changes the configuration, the old and the new
//! processes are two fleets, each keeping its fraction of itself in rotation; rounded up
//! each, `ceil(f × old) + ceil(f × new) >= ceil(f × (old + new))`, so the split never keeps
//! less of the whole than asked, and the old members leave the hash as they stop writing.
//! Outside a rollout the warning points at two applications under one prefix, or at a
//! process whose configuration drifted. The price: the bound on the hash ([`MAX_MEMBERS`])
//! and each round's read count every configuration's members; a prefix per application
//! keeps them apart, as it keeps their entries apart.
//!
//! What comes back is untrusted: the script cuts every field and value to a bound, refuses a
//! hash of more than [`MAX_MEMBERS`] fields, and every member is validated here; one that
//! fails (a fingerprint that does not read included) is not counted.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use super::config::{SharedCache, SharedConnection};
use super::entry::{Fingerprint, is_fingerprint};
use crate::check::{CheckError, CheckErrorKind};
use crate::redis::client::{check_error, query};
use crate::verdict::{Fraction, Member, Standing};

/// The most members counted: a larger hash is not read (the guard is off for the round).
pub(crate) const MAX_MEMBERS: usize = 1000;
/// The longest process id counted, in bytes.
const MAX_ID_BYTES: usize = 200;
/// The longest value counted, in bytes (a cause names one database or component).
const MAX_VALUE_BYTES: usize = 300;
/// The longest cause written, in bytes: the value's bound less room for the stamp (at most
/// 20 digits), the fingerprint (32), `shared` and the spaces.
const MAX_CAUSE_BYTES: usize = MAX_VALUE_BYTES - 80;

/// Writes this process's standing (`ARGV[1]` its id, `ARGV[2]` the standing, `ARGV[3]` the
/// expiry in ms, `ARGV[4]` the most members, `ARGV[5]` the longest field or value returned)
/// and returns `{now_ms, fields_before, {field, value, ...}}`: the members written within
/// the expiry, each cut to the bound, or none when the hash had more fields than allowed.
const SCRIPT: &str = r"
local key = KEYS[1]
local expiry = tonumber(ARGV[3])
local cut = tonumber(ARGV[5])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local before = redis.call('HLEN', key)
if before > tonumber(ARGV[4]) then
  return {now, before, {}}
end
redis.call('HSET', key, ARGV[1], string.format('%.0f', now) .. ' ' .. ARGV[2])
redis.call('PEXPIRE', key, expiry)
local all = redis.call('HGETALL', key)
local live = {}
for i = 1, #all, 2 do
  local at = tonumber(string.match(all[i + 1], '^(%d+) '))
  if at == nil or now - at > expiry then
    redis.call('HDEL', key, all[i])
  else
    live[#live + 1] = string.sub(all[i], 1, cut)
    live[#live + 1] = string.sub(all[i + 1], 1, cut)
  end
end
return {now, before, live}
";

/// The fleet's members, for the fleet guard of one monitor.
pub(crate) struct FleetMembers {
    connection: SharedConnection,
    key: String,
    pub(crate) process_id: Arc<str>,
    pub(crate) fraction: Fraction,
    /// This process's configuration (the shared entry's fingerprint): only the members
    /// written by the same one count.
    fingerprint: Fingerprint,
    /// How long a member counts after it last wrote: the readiness verdict's staleness
    /// bound, so that a process whose monitor stopped stops counting when its own readiness
    /// would fail closed.
    expiry: Duration,
    /// Whether the last round failed to publish or read, for one warning per transition.
    failing: AtomicBool,
    /// Whether the last read refused some members, for one warning per transition.
    refusing: AtomicBool,
    /// Whether the last read found members of another configuration, for one warning per
    /// transition.
    foreign: AtomicBool,
    /// What the last round read, for the operator's page: `None` while Redis does not
    /// answer (the guard is off).
    seen: Mutex<Option<FleetSeen>>,
}

/// The fleet's members as the last readiness round read them.
#[derive(Clone, Debug)]
#[cfg_attr(
    not(feature = "page"),
    allow(dead_code, reason = "what the operator's page shows of the fleet")
)]
pub(crate) struct FleetSeen {
    pub(crate) at: SystemTime,
    /// This process among them.
    pub(crate) members: Vec<Member>,
}

impl FleetMembers {
    /// The fleet guard of `cache`, if it is on, for a process of the configuration
    /// `fingerprint`; members count for `expiry` after they last wrote. Off, with a warning,
    /// when this process's id could not be counted.
    pub(crate) fn new(
        cache: &SharedCache,
        process_id: Arc<str>,
        fingerprint: Fingerprint,
        expiry: Duration,
    ) -> Option<Self> {
        let fraction = cache.fleet_guard?;
        if let Err(problem) = valid_text(&process_id, MAX_ID_BYTES) {
            tracing::warn!(
                process_id = %process_id,
                "the fleet guard is off: this process's id {problem}"
            );
            return None;
        }
        Some(Self {
            connection: cache.connection.clone(),
            key: cache.fleet_key(),
            process_id,
            fraction,
            fingerprint,
            expiry,
            failing: AtomicBool::new(false),
            refusing: AtomicBool::new(false),
            foreign: AtomicBool::new(false),
            seen: Mutex::new(None),
        })
    }

    /// Publishes `standing` and returns the fleet's members (this process among them),
    /// bounded by `deadline`. An error means the guard is off for this round.
    pub(crate) async fn publish_and_read(
        &self,
        standing: &Standing,
        deadline: Instant,
    ) -> Result<Vec<Member>, CheckError> {
        let result = self.exchange(standing, deadline).await;
        {
            let seen = result.as_ref().ok().map(|members| FleetSeen {
                at: SystemTime::now(),
                members: members.clone(),
            });
            *self
                .seen
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = seen;
        }
        let failing = result.is_err();
        if self.failing.swap(failing, Ordering::Relaxed) != failing {
            match &result {
                Err(error) => tracing::warn!(
                    key = %self.key,
                    %error,
                    "the fleet guard is off until Redis answers again: readiness is this process's own"
                ),
                Ok(_) => tracing::info!(key = %self.key, "the fleet guard counts the fleet again"),
            }
        }
        result
    }

    /// The fleet's members as the last readiness round read them; `None` before the first
    /// or while Redis does not answer.
    pub(crate) fn seen(&self) -> Option<FleetSeen> {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    async fn exchange(
        &self,
        standing: &Standing,
        deadline: Instant,
    ) -> Result<Vec<Member>, CheckError> {
        let script = ::redis::cmd("EVAL")
            .arg(SCRIPT)
            .arg(1)
            .arg(&self.key)
            .arg(&*self.process_id)
            .arg(encode(&self.fingerprint, standing))
            .arg(
                u64::try_from(self.expiry.as_millis())
                    .unwrap_or(u64::MAX)
                    .max(1),
            )
            .arg(MAX_MEMBERS)
            // One byte over the bound tells a value that is too long.
            .arg(MAX_ID_BYTES.max(MAX_VALUE_BYTES) + 1)
            .clone();
        let exchange = async {
            let mut connection = self.connection.get().await?;
            query(&mut connection, &script)
                .await
                .map_err(|error| check_error(&error))
        };
        let (now, before, fields): (i64, i64, Vec<Vec<u8>>) =
            match tokio::time::timeout_at(deadline.into(), exchange).await {
                Ok(Ok(answer)) => answer,
                Ok(Err(error)) => {
                    return Err(CheckError::new(
                        error.kind(),
                        format!("Redis EVAL {}: {}", self.key, error.message()),
                    ));
                }
                Err(_) => {
                    return Err(CheckError::new(
                        CheckErrorKind::Timeout,
                        format!(
                            "Redis EVAL {}: no answer within the round's deadline",
                            self.key
                        ),
                    ));
                }
            };
        if usize::try_from(before).map_or(true, |before| before > MAX_MEMBERS) {
            return Err(CheckError::new(
                CheckErrorKind::Other,
                format!(
                    "{} holds {before} members, more than the {MAX_MEMBERS} the guard counts",
                    self.key
                ),
            ));
        }
        let Decoded {
            members,
            foreign,
            refused,
        } = decode(&fields, now, self.expiry, &self.fingerprint);
        if let Some(problem) = &refused {
            if !self.refusing.swap(true, Ordering::Relaxed) {
                tracing::warn!(key = %self.key, "fleet members not counted: {problem}");
            }
        } else {
            self.refusing.store(false, Ordering::Relaxed);
        }
        if self.foreign.swap(foreign > 0, Ordering::Relaxed) != (foreign > 0) {
            if foreign > 0 {
                tracing::warn!(
                    key = %self.key,
                    process_id = %self.process_id,
                    fingerprint = %self.fingerprint,
                    foreign,
                    "fleet members of another configuration are not counted (another application under this key prefix, or the other side of a rollout): the guard counts this configuration's members only"
                );
            } else {
                tracing::info!(
                    key = %self.key,
                    process_id = %self.process_id,
                    "the fleet's members are all of this process's configuration again"
                );
            }
        }
        Ok(members)
    }
}

impl std::fmt::Debug for FleetMembers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The connection is not shown: its Debug holds the password.
        f.debug_struct("FleetMembers")
            .field("key", &self.key)
            .field("process_id", &self.process_id)
            .field("fraction", &self.fraction)
            .field("fingerprint", &self.fingerprint)
            .field("expiry", &self.expiry)
            .finish_non_exhaustive()
    }
}

/// `standing` of a process of the configuration `fingerprint`, as the hash holds it (after
/// Redis's clock).
fn encode(fingerprint: &Fingerprint, standing: &Standing) -> String {
    match standing {
        Standing::Ready => format!("{fingerprint} ready"),
        Standing::Local => format!("{fingerprint} local"),
        Standing::Returning => format!("{fingerprint} returning"),
        Standing::Shared { cause } => {
            // Configured names are short; a long one is cut, at a character's boundary.
            let mut end = cause.len().min(MAX_CAUSE_BYTES);
            while !cause.is_char_boundary(end) {
                end -= 1;
            }
            format!("{fingerprint} shared {}", &cause[..end])
        }
    }
}

/// What the script's answer holds, for a process of one configuration.
#[derive(Debug, Default, PartialEq, Eq)]
struct Decoded {
    /// The members of this configuration, written within the expiry.
    members: Vec<Member>,
    /// How many members of another configuration were left out.
    foreign: usize,
    /// Why some members were not counted, if any did not read.
    refused: Option<String>,
}

/// One field of the hash, read.
enum Field {
    /// A member of this configuration, within the expiry.
    Counted(Member),
    /// A member of another configuration, within the expiry.
    Foreign,
    /// Too old to count (or stamped too far ahead), of whichever configuration.
    Expired,
}

/// The members in the script's answer (`field, value, ...`) read at `now` (Redis's clock,
/// ms) by a process of the configuration `own`: members older than `expiry`, of another
/// configuration, or that do not read as this module writes them are left out.
fn decode(fields: &[Vec<u8>], now: i64, expiry: Duration, own: &Fingerprint) -> Decoded {
    let mut decoded = Decoded::default();
    let expiry = i64::try_from(expiry.as_millis()).unwrap_or(i64::MAX);
    for pair in fields.chunks(2).take(MAX_MEMBERS + 1) {
        let field = match pair {
            [id, value] => field(id, value, now, expiry, own),
            _ => Err("an odd number of fields and values".to_owned()),
        };
        match field {
            Ok(Field::Counted(member)) => decoded.members.push(member),
            Ok(Field::Foreign) => decoded.foreign += 1,
            Ok(Field::Expired) => {}
            Err(problem) => {
                decoded.refused.get_or_insert(problem);
            }
        }
    }
    decoded
}

/// One field and its value, for a process of the configuration `own`.
fn field(
    id: &[u8],
    value: &[u8],
    now: i64,
    expiry: i64,
    own: &Fingerprint,
) -> Result<Field, String> {
    let id = std::str::from_utf8(id).map_err(|_| "a process id is not UTF-8".to_owned())?;
    valid_text(id, MAX_ID_BYTES).map_err(|problem| format!("a process id {problem}"))?;
    let value =
        std::str::from_utf8(value).map_err(|_| format!("the standing of {id:?} is not UTF-8"))?;
    valid_text(value, MAX_VALUE_BYTES)
        .map_err(|problem| format!("the standing of {id:?} {problem}"))?;
    let refused = || format!("the standing of {id:?} does not read: {value:?}");
    let (at, rest) = value.split_once(' ').ok_or_else(refused)?;
    let at: i64 = at.parse().map_err(|_| refused())?;
    // Written by the same clock: a member from the future is another server's (a
    // failover), counted while within the expiry either way.
    let fresh = now.abs_diff(at) <= expiry.unsigned_abs();
    let (fingerprint, standing) = rest.split_once(' ').ok_or_else(refused)?;
    if !is_fingerprint(fingerprint) {
        return Err(format!(
            "the standing of {id:?} names no configuration: {value:?}"
        ));
    }
    if fingerprint != own.as_str() {
        // Another configuration's words are not read: it may be another version's.
        return Ok(if fresh {
            Field::Foreign
        } else {
            Field::Expired
        });
    }
    let standing = match standing.split_once(' ') {
        None if standing == "ready" => Standing::Ready,
        None if standing == "local" => Standing::Local,
        None if standing == "returning" => Standing::Returning,
        Some(("shared", cause)) if !cause.is_empty() => Standing::Shared {
            cause: Arc::from(cause),
        },
        _ => return Err(refused()),
    };
    if !fresh {
        return Ok(Field::Expired);
    }
    Ok(Field::Counted(Member {
        id: Arc::from(id),
        standing,
    }))
}

/// Whether `text` may be counted: not empty, at most `max` bytes, no control character.
fn valid_text(text: &str, max: usize) -> Result<(), String> {
    if text.is_empty() {
        Err("is empty".to_owned())
    } else if text.len() > max {
        Err(format!("is longer than {max} bytes"))
    } else if text.chars().any(char::is_control) {
        Err("holds a control character".to_owned())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::shared::entry::{Expected, Subject};

    const EXPIRY: Duration = Duration::from_secs(4);

    /// Another configuration's fingerprint, as one reads in the hash.
    const FOREIGN: &str = "0123456789abcdef0123456789abcdef";

    /// This process's configuration: one database.
    fn own() -> Fingerprint {
        let database = Subject {
            name: Arc::from("default"),
            target: Some(Arc::from("db:5432/app")),
            critical: true,
        };
        Expected::new(vec![database], Vec::new()).fingerprint
    }

    /// A value of this configuration, stamped `at`.
    fn ours(at: i64, standing: &str) -> String {
        format!("{at} {} {standing}", own())
    }

    fn decoded(fields: &[&[u8]]) -> Decoded {
        let fields: Vec<Vec<u8>> = fields.iter().map(|field| field.to_vec()).collect();
        decode(&fields, 10_000, EXPIRY, &own())
    }

    #[test]
    fn what_is_written_reads_back() {
        for standing in [
            Standing::Ready,
            Standing::Local,
            Standing::Returning,
            Standing::Shared {
                cause: Arc::from("database `default`"),
            },
        ] {
            let value = format!("9000 {}", encode(&own(), &standing));
            assert_eq!(
                decoded(&[b"web-1/12", value.as_bytes()]),
                Decoded {
                    members: vec![Member {
                        id: Arc::from("web-1/12"),
                        standing
                    }],
                    foreign: 0,
                    refused: None,
                }
            );
        }
    }

    #[test]
    fn a_long_cause_is_cut_at_a_character_boundary() {
        let cause: String = "é".repeat(400);
        let encoded = encode(
            &own(),
            &Standing::Shared {
                cause: Arc::from(cause),
            },
        );
        let value = format!("{} {encoded}", u64::MAX);
        assert!(value.len() <= MAX_VALUE_BYTES, "{}", value.len());
        let value = format!("9000 {encoded}");
        let read = decoded(&[b"a", value.as_bytes()]);
        assert_eq!((read.members.len(), read.refused), (1, None));
    }

    #[test]
    fn members_past_the_expiry_do_not_count() {
        let (old, new) = (ours(5999, "ready"), ours(6000, "ready"));
        let read = decoded(&[b"old", old.as_bytes(), b"new", new.as_bytes()]);
        assert_eq!(read.refused, None);
        assert_eq!(read.members.len(), 1);
        assert_eq!(&*read.members[0].id, "new");
    }

    /// Issue 29 C2: a member another configuration wrote is left out of the count, ready or
    /// not, whatever its words (another version's included), and counted as such; past the
    /// expiry it is not counted at all.
    #[test]
    fn members_of_another_configuration_are_left_out() {
        let (ready, held) = (ours(9000, "ready"), ours(9000, "local"));
        let foreign = [
            format!("9000 {FOREIGN} ready"),
            format!("9000 {FOREIGN} shared database `default`"),
            format!("9000 {} local", FOREIGN.to_uppercase()),
            format!("9000 {FOREIGN} standing-of-a-later-version"),
        ];
        let gone = format!("5999 {FOREIGN} ready");
        let mut fields: Vec<&[u8]> = vec![b"a-0", ready.as_bytes(), b"a-1", held.as_bytes()];
        for (index, value) in foreign.iter().enumerate() {
            fields.extend([
                ["b-0", "b-1", "b-2", "b-3"][index].as_bytes(),
                value.as_bytes(),
            ]);
        }
        fields.extend([&b"b-gone"[..], gone.as_bytes()]);
        let read = decoded(&fields);
        assert_eq!(read.refused, None);
        assert_eq!(read.foreign, 4);
        let ids: Vec<&str> = read.members.iter().map(|member| &*member.id).collect();
        assert_eq!(ids, ["a-0", "a-1"]);
    }

    #[test]
    fn untrusted_members_are_left_out_and_said_so() {
        let long_id = vec![b'a'; MAX_ID_BYTES + 1];
        let long_value = ours(9000, &format!("shared {}", "x".repeat(MAX_VALUE_BYTES)));
        let cases: [(Vec<u8>, String, &str); 14] = [
            (b"\xff".to_vec(), ours(9000, "ready"), "not UTF-8"),
            (long_id, ours(9000, "ready"), "longer than 200 bytes"),
            (b"a".to_vec(), long_value, "longer than 300 bytes"),
            (b"a\nb".to_vec(), ours(9000, "ready"), "control character"),
            (b"a".to_vec(), ours(9000, "maybe"), "does not read"),
            (b"a".to_vec(), ours(9000, "shared "), "does not read"),
            (b"a".to_vec(), ours(9000, "shared"), "does not read"),
            (
                b"a".to_vec(),
                format!("soon {} ready", own()),
                "does not read",
            ),
            (b"a".to_vec(), format!("9000 {}", own()), "does not read"),
            (b"a".to_vec(), "9000".to_owned(), "does not read"),
            (b"a".to_vec(), String::new(), "is empty"),
            // Without a fingerprint (an earlier version's member), or with one cut short.
            (b"a".to_vec(), "9000 ready".to_owned(), "does not read"),
            (
                b"a".to_vec(),
                "9000 shared database".to_owned(),
                "names no configuration",
            ),
            (
                b"a".to_vec(),
                format!("9000 {} ready", &FOREIGN[1..]),
                "names no configuration",
            ),
        ];
        let good = ours(9000, "ready");
        for (id, value, problem) in &cases {
            let read = decoded(&[id, value.as_bytes(), b"good", good.as_bytes()]);
            let refused = read.refused.unwrap_or_default();
            assert!(refused.contains(problem), "{value:?}: {refused}");
            assert_eq!(read.members.len(), 1, "{value:?}");
            assert_eq!(read.foreign, 0, "{value:?}");
        }
        // A field without its value is the last one.
        let read = decoded(&[b"good", good.as_bytes(), b"a"]);
        assert!(read.refused.unwrap_or_default().contains("odd number"));
        assert_eq!(read.members.len(), 1);
    }
}
