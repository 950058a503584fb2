//! Who may see more: the admin keys, and the role a request's credentials grant.
//!
//! The same keys guard the admin server's `/health` and control endpoints and, with
//! [`Details::Authorized`], decide who sees details in probe
//! bodies on any reader, the application's port included. A key is presented as
//! `Authorization: Bearer <key>` (or `X-Baldur-Admin-Key: <key>`, the legacy header
//! operators' tooling may send) and compared in constant time.

mod keys;
mod role;

pub use self::keys::{AccessKeys, MIN_KEY_LEN};
#[cfg_attr(
    not(feature = "admin"),
    allow(unused_imports, reason = "roles and refusals are the admin server's")
)]
pub(crate) use self::role::{Denied, KeyDigests, Role};
use crate::env::Details;
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
