//! Who may see more: the admin keys, and the role a request's credentials grant.
//!
//! The same keys guard the admin server's `/health` and control endpoints and, with
//! [`Details::Authorized`], decide who sees details in probe
//! bodies on any reader, the application's port included. A key is presented as
//! `Authorization: Bearer <key>` (or `X-Baldur-Admin-Key: <key>`, the legacy header
//! operators' tooling may send) and compared in constant time.

mod keys;
mod role;

pub use self::keys::AccessKeys;
#[cfg_attr(
    not(feature = "admin"),
    allow(unused_imports, reason = "roles and refusals are the admin server's")
)]
pub(crate) use self::role::{Denied, KeyDigests, Role};
use crate::env::{Details, NoCache};
use crate::verdict::Audience;

/// Who sees the details in a body (error text, targets, pool figures, timings): the one rule
/// every reader applies, the layers, the fused axum stack and the admin server alike.
/// `viewer`: the request holds the viewer key or the operator key.
pub(crate) fn audience(details: Details, viewer: bool) -> Audience {
    match details {
        Details::Always => Audience::Full,
        Details::Authorized if viewer => Audience::Full,
        Details::Authorized | Details::Never => Audience::Minimal,
    }
}

/// Whether a request's `?nocache=true` computes a fresh verdict: the one rule every reader
/// applies. Once keys guard a reader, [`NoCache::Allowed`] means their holders, as
/// [`NoCache::Authorized`] does: a fresh verdict costs a round of checks, and a reader that
/// asks for keys keeps that to those it trusts. `viewer`: the request holds the viewer key or
/// the operator key.
pub(crate) fn may_bypass(nocache: NoCache, keys_enabled: bool, viewer: bool) -> bool {
    match nocache {
        NoCache::Allowed => !keys_enabled || viewer,
        NoCache::Authorized => viewer,
        NoCache::Off => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn who_may_bypass_the_cache_on_every_reader() {
        // (policy, keys guard the reader, the request holds a key) -> bypass
        let table = [
            (NoCache::Allowed, false, false, true),
            (NoCache::Allowed, true, false, false),
            (NoCache::Allowed, true, true, true),
            (NoCache::Authorized, false, false, false),
            (NoCache::Authorized, true, false, false),
            (NoCache::Authorized, true, true, true),
            (NoCache::Off, false, false, false),
            (NoCache::Off, true, true, false),
        ];
        for (nocache, keys_enabled, viewer, bypass) in table {
            assert_eq!(
                may_bypass(nocache, keys_enabled, viewer),
                bypass,
                "{nocache:?} keys {keys_enabled} viewer {viewer}"
            );
        }
    }

    #[test]
    fn who_sees_details_on_every_reader() {
        let table = [
            (Details::Always, false, Audience::Full),
            (Details::Authorized, false, Audience::Minimal),
            (Details::Authorized, true, Audience::Full),
            (Details::Never, true, Audience::Minimal),
        ];
        for (details, viewer, expected) in table {
            assert_eq!(audience(details, viewer), expected, "{details:?} {viewer}");
        }
    }
}
