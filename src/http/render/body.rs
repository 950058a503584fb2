//! A probe answer's body: pre-rendered bytes, with the verdict's age spliced in.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

/// What follows the age in every body that carries it: the end of `_cache` and of the body.
pub(crate) const AFTER_AGE: &[u8] = b"}}";

/// A probe's response body: bytes rendered once per round, followed, when the response
/// carries the verdict's age, by its digits in milliseconds and [`AFTER_AGE`]. The digits
/// come from a static table, so building and sending the body allocates nothing and touches
/// no reference count but the rendered bytes' own.
///
/// Kept small, because hyper and every layer move the response, body included, several times
/// per request (the storm bench's callgrind rows count those copies).
#[derive(Clone, Debug, Default)]
pub(crate) struct ProbeBody {
    head: Bytes,
    age: Option<AgeDigits>,
    /// Bytes not yet handed out: hyper asks for it (`is_end_stream`, `size_hint`) several
    /// times per response, so it is kept rather than recomputed.
    remaining: u64,
}

impl ProbeBody {
    /// `head`, then (when given) the age's digits and [`AFTER_AGE`].
    pub(crate) fn new(head: Bytes, age_ms: Option<u64>) -> Self {
        let age = age_ms.map(AgeDigits::new);
        let remaining = head.len() as u64 + age.as_ref().map_or(0, AgeDigits::remaining_len);
        Self {
            head,
            age,
            remaining,
        }
    }

    pub(crate) fn empty() -> Self {
        Self::default()
    }

    pub(crate) fn next_frame(&mut self) -> Option<Frame<Bytes>> {
        let chunk = if self.head.is_empty() {
            self.age.as_mut().and_then(AgeDigits::next_group)?
        } else {
            std::mem::take(&mut self.head)
        };
        self.remaining -= chunk.len() as u64;
        Some(Frame::data(chunk))
    }

    pub(crate) fn len(&self) -> u64 {
        self.remaining
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

impl Body for ProbeBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.next_frame().map(Ok))
    }

    fn is_end_stream(&self) -> bool {
        Self::is_end_stream(self)
    }

    fn size_hint(&self) -> SizeHint {
        Self::size_hint(self)
    }
}

/// The length of one entry of [`GROUPS`].
const ENTRY: usize = 3 + AFTER_AGE.len();

/// Every number from 000 to 999, three ASCII digits each, each followed by [`AFTER_AGE`]: a
/// group in the middle of a number is the digits alone, the last one is sent with what follows
/// it, in one frame (each frame costs the server a write of its own).
static GROUPS: [u8; 1000 * ENTRY] = groups();

const fn groups() -> [u8; 1000 * ENTRY] {
    let mut table = [0; 1000 * ENTRY];
    let mut n = 0;
    while n < 1000 {
        let at = n * ENTRY;
        table[at] = b'0' + (n / 100) as u8;
        table[at + 1] = b'0' + (n / 10 % 10) as u8;
        table[at + 2] = b'0' + (n % 10) as u8;
        let mut i = 0;
        while i < AFTER_AGE.len() {
            table[at + 3 + i] = AFTER_AGE[i];
            i += 1;
        }
        n += 1;
    }
    table
}

/// The decimal digits of a number, handed out in groups of three (the first unpadded) as
/// static slices, the last with [`AFTER_AGE`].
#[derive(Clone, Debug)]
struct AgeDigits {
    value: u64,
    /// The place value of the next group to emit; zero once every group is out.
    divisor: u64,
    first: bool,
}

impl AgeDigits {
    fn new(value: u64) -> Self {
        let mut divisor = 1;
        while value / divisor >= 1000 {
            divisor *= 1000;
        }
        Self {
            value,
            divisor,
            first: true,
        }
    }

    fn next_group(&mut self) -> Option<Bytes> {
        if self.divisor == 0 {
            return None;
        }
        let group = (self.value / self.divisor % 1000) as usize;
        let skip = if self.first {
            3 - digit_count(group as u64) as usize
        } else {
            0
        };
        self.first = false;
        let last = self.divisor == 1;
        self.divisor /= 1000;
        let at = group * ENTRY;
        let end = if last { at + ENTRY } else { at + 3 };
        Some(Bytes::from_static(&GROUPS[at + skip..end]))
    }

    fn remaining_len(&self) -> u64 {
        if self.divisor == 0 {
            return 0;
        }
        let groups_after = u64::from(self.divisor.ilog10() / 3);
        let leading = if self.first {
            digit_count(self.value / self.divisor % 1000)
        } else {
            3
        };
        leading + groups_after * 3 + AFTER_AGE.len() as u64
    }
}

fn digit_count(value: u64) -> u64 {
    u64::from(value.checked_ilog10().unwrap_or(0)) + 1
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    async fn collect(body: ProbeBody) -> (String, u64) {
        let hint = body.len();
        let bytes = body.collect().await.unwrap().to_bytes();
        (String::from_utf8(bytes.to_vec()).unwrap(), hint)
    }

    #[tokio::test]
    async fn age_is_spliced_between_head_and_tail() {
        for age in [
            0,
            7,
            42,
            999,
            1000,
            1001,
            12_345,
            1_000_000,
            987_654_321_012,
            u64::MAX,
        ] {
            let body = ProbeBody::new(Bytes::from_static(b"{\"_cache\":{\"age_ms\":"), Some(age));
            let (text, hint) = collect(body).await;
            assert_eq!(text, format!("{{\"_cache\":{{\"age_ms\":{age}}}}}"));
            assert_eq!(hint, text.len() as u64, "{age}");
        }
    }

    #[test]
    fn the_last_group_of_digits_goes_with_what_follows_it() {
        let frames = |age| {
            let mut body = ProbeBody::new(Bytes::from_static(b"{"), Some(age));
            std::iter::from_fn(|| body.next_frame()).count()
        };
        assert_eq!(frames(0), 2);
        assert_eq!(frames(999), 2);
        assert_eq!(frames(1000), 3);
        assert_eq!(frames(999_999), 3);
        assert_eq!(frames(u64::MAX), 1 + 7, "20 digits: seven groups");
    }

    #[tokio::test]
    async fn plain_and_empty_bodies() {
        assert_eq!(
            collect(ProbeBody::new(Bytes::from_static(b"ok"), None)).await,
            ("ok".to_owned(), 2)
        );
        let empty = ProbeBody::empty();
        assert!(Body::is_end_stream(&empty));
        assert_eq!(collect(empty).await, (String::new(), 0));
    }
}
