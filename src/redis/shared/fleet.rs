//! The fleet guard's Redis side: each readiness round, a process publishes where it stands
//! and reads where the others stand, in one round trip.
//!
//! The members are one hash, `<prefix>fleet`: a field per process id, its value
//! `<ms> <standing>` where `<ms>` is Redis's clock when it was written and `<standing>` is
//! `ready`, `local` or `shared <cause>`. One script writes this process's field, drops the
//! fields older than the members' expiry, and returns the rest: one clock (Redis's) for
//! every member, so that the hosts' clocks never decide who counts, and no `KEYS`/`SCAN` over
//! a key per member. The hash itself expires when no process has written it for as long.
//!
//! What comes back is untrusted: the script cuts every field and value to a bound, refuses a
//! hash of more than [`MAX_MEMBERS`] fields, and every member is validated here; one that
//! fails is not counted.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::config::{SharedCache, SharedConnection};
use crate::check::{CheckError, CheckErrorKind};
use crate::redis::client::{check_error, query};
use crate::verdict::{Fraction, Member, Standing};

/// The most members counted: a larger hash is not read (the guard is off for the round).
pub(crate) const MAX_MEMBERS: usize = 1000;
/// The longest process id counted, in bytes.
const MAX_ID_BYTES: usize = 200;
/// The longest value counted, in bytes (a cause names one database or component).
const MAX_VALUE_BYTES: usize = 300;

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
    /// How long a member counts after it last wrote: the readiness verdict's staleness
    /// bound, so that a process whose monitor stopped stops counting when its own readiness
    /// would fail closed.
    expiry: Duration,
    /// Whether the last round failed to publish or read, for one warning per transition.
    failing: AtomicBool,
    /// Whether the last read refused some members, for one warning per transition.
    refusing: AtomicBool,
}

impl FleetMembers {
    /// The fleet guard of `cache`, if it is on; members count for `expiry` after they last
    /// wrote. Off, with a warning, when this process's id could not be counted.
    pub(crate) fn new(cache: &SharedCache, process_id: Arc<str>, expiry: Duration) -> Option<Self> {
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
            expiry,
            failing: AtomicBool::new(false),
            refusing: AtomicBool::new(false),
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
            .arg(encode(standing))
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
        let (members, refused) = decode(&fields, now, self.expiry);
        if let Some(problem) = &refused {
            if !self.refusing.swap(true, Ordering::Relaxed) {
                tracing::warn!(key = %self.key, "fleet members not counted: {problem}");
            }
        } else {
            self.refusing.store(false, Ordering::Relaxed);
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
            .field("expiry", &self.expiry)
            .finish_non_exhaustive()
    }
}

/// `standing` as the hash holds it (after Redis's clock).
fn encode(standing: &Standing) -> String {
    match standing {
        Standing::Ready => "ready".to_owned(),
        Standing::Local => "local".to_owned(),
        Standing::Shared { cause } => {
            // Configured names are short; a long one is cut, at a character's boundary.
            let mut end = cause.len().min(MAX_VALUE_BYTES - 40);
            while !cause.is_char_boundary(end) {
                end -= 1;
            }
            format!("shared {}", &cause[..end])
        }
    }
}

/// The members in the script's answer (`field, value, ...`) read at `now` (Redis's clock,
/// ms), and why some were not counted, if any were not: members older than `expiry`, or
/// that do not read as this module writes them, are left out.
fn decode(fields: &[Vec<u8>], now: i64, expiry: Duration) -> (Vec<Member>, Option<String>) {
    let mut members = Vec::new();
    let mut refused = None;
    let expiry = i64::try_from(expiry.as_millis()).unwrap_or(i64::MAX);
    for pair in fields.chunks(2).take(MAX_MEMBERS + 1) {
        let member = match pair {
            [id, value] => member(id, value, now, expiry),
            _ => Err("an odd number of fields and values".to_owned()),
        };
        match member {
            Ok(Some(member)) => members.push(member),
            Ok(None) => {}
            Err(problem) => {
                refused.get_or_insert(problem);
            }
        }
    }
    (members, refused)
}

/// One member, `None` when it is too old to count.
fn member(id: &[u8], value: &[u8], now: i64, expiry: i64) -> Result<Option<Member>, String> {
    let id = std::str::from_utf8(id).map_err(|_| "a process id is not UTF-8".to_owned())?;
    valid_text(id, MAX_ID_BYTES).map_err(|problem| format!("a process id {problem}"))?;
    let value =
        std::str::from_utf8(value).map_err(|_| format!("the standing of {id:?} is not UTF-8"))?;
    valid_text(value, MAX_VALUE_BYTES)
        .map_err(|problem| format!("the standing of {id:?} {problem}"))?;
    let refused = || format!("the standing of {id:?} does not read: {value:?}");
    let (at, standing) = value.split_once(' ').ok_or_else(refused)?;
    let at: i64 = at.parse().map_err(|_| refused())?;
    let standing = match standing.split_once(' ') {
        None if standing == "ready" => Standing::Ready,
        None if standing == "local" => Standing::Local,
        Some(("shared", cause)) if !cause.is_empty() => Standing::Shared {
            cause: Arc::from(cause),
        },
        _ => return Err(refused()),
    };
    // Written by the same clock: a member from the future is another server's (a
    // failover), counted while within the expiry either way.
    if now.abs_diff(at) > expiry.unsigned_abs() {
        return Ok(None);
    }
    Ok(Some(Member {
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

    const EXPIRY: Duration = Duration::from_secs(4);

    fn decoded(fields: &[&[u8]]) -> (Vec<Member>, Option<String>) {
        let fields: Vec<Vec<u8>> = fields.iter().map(|field| field.to_vec()).collect();
        decode(&fields, 10_000, EXPIRY)
    }

    #[test]
    fn what_is_written_reads_back() {
        for standing in [
            Standing::Ready,
            Standing::Local,
            Standing::Shared {
                cause: Arc::from("database `default`"),
            },
        ] {
            let value = format!("9000 {}", encode(&standing));
            let (members, refused) = decoded(&[b"web-1/12", value.as_bytes()]);
            assert_eq!(refused, None);
            assert_eq!(
                members,
                [Member {
                    id: Arc::from("web-1/12"),
                    standing
                }]
            );
        }
    }

    #[test]
    fn a_long_cause_is_cut_at_a_character_boundary() {
        let cause: String = "é".repeat(400);
        let encoded = encode(&Standing::Shared {
            cause: Arc::from(cause),
        });
        assert!(encoded.len() <= MAX_VALUE_BYTES - 40 + "shared ".len());
        let value = format!("9000 {encoded}");
        let (members, refused) = decoded(&[b"a", value.as_bytes()]);
        assert_eq!((members.len(), refused), (1, None));
    }

    #[test]
    fn members_past_the_expiry_do_not_count() {
        let (members, refused) = decoded(&[b"old", b"5999 ready", b"new", b"6000 ready"]);
        assert_eq!(refused, None);
        assert_eq!(members.len(), 1);
        assert_eq!(&*members[0].id, "new");
    }

    #[test]
    fn untrusted_members_are_left_out_and_said_so() {
        let long_id = vec![b'a'; MAX_ID_BYTES + 1];
        let long_value = format!("9000 shared {}", "x".repeat(MAX_VALUE_BYTES));
        for (fields, problem) in [
            (vec![&b"\xff"[..], b"9000 ready"], "not UTF-8"),
            (vec![&long_id[..], b"9000 ready"], "longer than 200 bytes"),
            (vec![b"a", long_value.as_bytes()], "longer than 300 bytes"),
            (vec![b"a\nb", b"9000 ready"], "control character"),
            (vec![b"a", b"9000 maybe"], "does not read"),
            (vec![b"a", b"9000 shared "], "does not read"),
            (vec![b"a", b"soon ready"], "does not read"),
            (vec![b"a", b"9000"], "does not read"),
            (vec![b"a", b""], "is empty"),
            (vec![b"a"], "odd number"),
        ] {
            let mut with_a_good_one = fields.clone();
            // A field without its value is the last one.
            if problem != "odd number" {
                with_a_good_one.extend([&b"good"[..], b"9000 ready"]);
            }
            let (members, refused) = decoded(&with_a_good_one);
            let refused = refused.unwrap_or_default();
            assert!(refused.contains(problem), "{fields:?}: {refused}");
            assert_eq!(
                members.len() + 1,
                with_a_good_one.len().div_ceil(2),
                "{fields:?}"
            );
        }
    }
}
