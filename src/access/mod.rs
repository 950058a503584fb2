//! Who may see more: the admin keys, and the role a request's credentials grant.
//!
//! The same keys guard the admin server's `/health` and control endpoints and, with
//! [`Details::Authorized`](crate::config::Details::Authorized), decide who sees details in probe
//! bodies on any reader, the application's port included. A key is presented as
//! `Authorization: Bearer <key>` (or `X-Baldur-Admin-Key: <key>`, the legacy header
//! operators' tooling may send) and compared in constant time.

mod keys;
mod role;

pub use self::keys::{AccessKeys, MIN_KEY_LEN};
#[allow(
    unused_imports,
    reason = "the admin server uses them; it moves onto them next"
)]
pub(crate) use self::role::{Denied, KeyDigests, Role};
