//! The role a request's credentials grant: the key it presents, hashed and compared in
//! constant time with the configured keys' digests.

use http::HeaderMap;
use http::header::AUTHORIZATION;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Baldur's admin header, accepted so that operators' tooling carries over.
const LEGACY_KEY_HEADER: &str = "x-baldur-admin-key";

/// What a request may see.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Role {
    /// No key presented where none is needed (the admin server's public probes).
    #[cfg_attr(not(feature = "admin"), allow(dead_code))]
    Anonymous,
    Viewer,
    Operator,
}

/// Why a request has no role.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Denied {
    /// No credentials at all.
    Missing,
    /// Credentials that do not parse (no token, bad bytes, a header twice).
    Malformed,
    /// Credentials in another scheme than the key's (`Authorization: Basic ...` where
    /// `Bearer` is read), and no `X-Baldur-Admin-Key`: not a key at all.
    Scheme,
    /// A well-formed key that matches no configured key.
    Invalid,
}

/// The configured keys, as SHA-256 digests: comparing digests of equal length in constant
/// time tells an attacker neither the content nor the length of a key.
#[derive(Clone, Default)]
pub(crate) struct KeyDigests {
    operator: Option<[u8; 32]>,
    readonly: Option<[u8; 32]>,
}

impl KeyDigests {
    pub(crate) fn new(operator: Option<&[u8]>, readonly: Option<&[u8]>) -> Self {
        Self {
            operator: operator.map(digest),
            readonly: readonly.map(digest),
        }
    }

    /// Whether any role can be granted at all.
    pub(crate) fn enabled(&self) -> bool {
        self.operator.is_some()
    }

    /// The role the request's credentials grant.
    pub(crate) fn role(&self, headers: &HeaderMap) -> Result<Role, Denied> {
        self.role_of(presented_key(headers)?)
    }

    /// The role a browser's credentials grant: the key as the password of Basic credentials
    /// (any user name: a browser's login dialog asks for both, and sends them as Basic
    /// credentials), else the key as [`role`](Self::role) reads it.
    #[cfg(feature = "page")]
    pub(crate) fn browser_role(&self, headers: &HeaderMap) -> Result<Role, Denied> {
        match basic_password(headers) {
            Some(password) => self.role_of(&password?),
            None => self.role(headers),
        }
    }

    fn role_of(&self, key: &[u8]) -> Result<Role, Denied> {
        let presented = digest(key);
        // Both comparisons always run, so timing does not tell which key matched.
        let is_operator = matches(self.operator.as_ref(), &presented);
        let is_viewer = matches(self.readonly.as_ref(), &presented);
        if is_operator {
            Ok(Role::Operator)
        } else if is_viewer {
            Ok(Role::Viewer)
        } else {
            Err(Denied::Invalid)
        }
    }

    /// Whether the request holds at least the viewer role; `false` for any failure.
    pub(crate) fn grants_viewer(&self, headers: &HeaderMap) -> bool {
        self.enabled() && self.role(headers).is_ok_and(|role| role >= Role::Viewer)
    }
}

impl std::fmt::Debug for KeyDigests {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self { operator, readonly } = self;
        f.debug_struct("KeyDigests")
            .field("operator", &operator.is_some())
            .field("readonly", &readonly.is_some())
            .finish()
    }
}

fn digest(key: &[u8]) -> [u8; 32] {
    Sha256::digest(key).into()
}

fn matches(configured: Option<&[u8; 32]>, presented: &[u8; 32]) -> bool {
    configured.is_some_and(|configured| bool::from(configured.ct_eq(presented)))
}

/// The key a request presents: `Authorization: Bearer <key>`, else `X-Baldur-Admin-Key`
/// (also when `Authorization` carries another scheme, say a proxy's Basic credentials).
///
/// Either header twice is malformed (RFC 9110 allows one `Authorization`): which of two
/// credentials counts would otherwise be up to whoever reads them, as with two `Host`s.
fn presented_key(headers: &HeaderMap) -> Result<&[u8], Denied> {
    for name in [AUTHORIZATION.as_str(), LEGACY_KEY_HEADER] {
        if headers.get_all(name).iter().nth(1).is_some() {
            return Err(Denied::Malformed);
        }
    }
    let bearer = headers.get(AUTHORIZATION).map(|value| {
        let value = value.to_str().map_err(|_| Denied::Malformed)?.trim();
        match value.split_once(' ') {
            Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => {
                let token = token.trim();
                if token.is_empty() || token.contains(' ') {
                    Err(Denied::Malformed)
                } else {
                    Ok(Some(token.as_bytes()))
                }
            }
            None if value.eq_ignore_ascii_case("bearer") => Err(Denied::Malformed),
            // Another scheme: not ours, look further.
            _ => Ok(None),
        }
    });
    match (
        bearer.transpose()?.flatten(),
        headers.get(LEGACY_KEY_HEADER),
    ) {
        (Some(token), _) => Ok(token),
        (None, Some(value)) if !value.as_bytes().trim_ascii().is_empty() => {
            Ok(value.as_bytes().trim_ascii())
        }
        (None, Some(_)) => Err(Denied::Malformed),
        (None, None) if headers.contains_key(AUTHORIZATION) => Err(Denied::Scheme),
        (None, None) => Err(Denied::Missing),
    }
}

/// The password of `Authorization: Basic <base64(user:password)>`, if that is what the
/// request presents; malformed when it does not decode, has no `:`, or the password is empty.
#[cfg(feature = "page")]
fn basic_password(headers: &HeaderMap) -> Option<Result<Vec<u8>, Denied>> {
    use base64::Engine as _;

    let mut values = headers.get_all(AUTHORIZATION).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return Some(Err(Denied::Malformed));
    }
    let value = value.to_str().ok()?.trim();
    let (scheme, token) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD.decode(token.trim());
    let password = decoded.ok().and_then(|credentials| {
        let colon = credentials.iter().position(|&byte| byte == b':')?;
        let password = credentials[colon + 1..].to_vec();
        (!password.is_empty()).then_some(password)
    });
    Some(password.ok_or(Denied::Malformed))
}

#[cfg(test)]
mod proptests;

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn keys() -> KeyDigests {
        KeyDigests::new(
            Some(b"operator-key-0123456789"),
            Some(b"viewer-key-0123456789"),
        )
    }

    fn role(name: &'static str, value: &[u8]) -> Result<Role, Denied> {
        let mut headers = HeaderMap::new();
        headers.insert(name, HeaderValue::from_bytes(value).unwrap());
        keys().role(&headers)
    }

    #[test]
    fn bearer_keys_grant_their_roles() {
        assert_eq!(
            role("authorization", b"Bearer operator-key-0123456789"),
            Ok(Role::Operator)
        );
        assert_eq!(
            role("authorization", b"bearer   viewer-key-0123456789 "),
            Ok(Role::Viewer)
        );
        assert_eq!(
            role("x-baldur-admin-key", b"viewer-key-0123456789"),
            Ok(Role::Viewer)
        );
        assert_eq!(keys().role(&HeaderMap::new()), Err(Denied::Missing));
    }

    #[test]
    fn anything_else_is_refused() {
        for value in [
            &b"Bearer wrong-key-0123456789"[..],
            b"Bearer operator-key-012345678",
            b"Bearer operator-key-0123456789x",
        ] {
            assert_eq!(
                role("authorization", value),
                Err(Denied::Invalid),
                "{value:?}"
            );
        }
        for value in [
            &b"Bearer"[..],
            b"Bearer ",
            b"Bearer a b",
            b"Bearer \xff\xfe",
        ] {
            assert_eq!(
                role("authorization", value),
                Err(Denied::Malformed),
                "{value:?}"
            );
        }
        // Not a key's form at all: another scheme, or a key without its scheme.
        for value in [&b"Basic b3BlcmF0b3I6a2V5"[..], b"operator-key-0123456789"] {
            assert_eq!(
                role("authorization", value),
                Err(Denied::Scheme),
                "{value:?}"
            );
        }
        assert_eq!(role("x-baldur-admin-key", b"  "), Err(Denied::Malformed));
    }

    #[test]
    fn two_of_either_header_are_malformed() {
        // Found by the malformed-input corpus: the admin server granted the first of two
        // `Authorization` headers.
        let mut headers = HeaderMap::new();
        headers.append(
            AUTHORIZATION,
            HeaderValue::from_static("Bearer viewer-key-0123456789"),
        );
        headers.append(AUTHORIZATION, HeaderValue::from_static("Bearer wrong"));
        assert_eq!(keys().role(&headers), Err(Denied::Malformed));
        let mut headers = HeaderMap::new();
        headers.append(
            LEGACY_KEY_HEADER,
            HeaderValue::from_static("viewer-key-0123456789"),
        );
        headers.append(
            LEGACY_KEY_HEADER,
            HeaderValue::from_static("viewer-key-0123456789"),
        );
        assert_eq!(keys().role(&headers), Err(Denied::Malformed));
    }

    #[test]
    fn without_keys_nobody_is_a_viewer() {
        let mut headers = HeaderMap::new();
        headers.insert(
            AUTHORIZATION,
            HeaderValue::from_static("Bearer anything-0123456789"),
        );
        assert!(!KeyDigests::default().grants_viewer(&headers));
        assert!(!keys().grants_viewer(&headers));
        headers.insert(
            AUTHORIZATION,
            HeaderValue::from_static("Bearer viewer-key-0123456789"),
        );
        assert!(keys().grants_viewer(&headers));
    }

    #[cfg(feature = "page")]
    #[test]
    fn a_browser_presents_the_key_as_the_password_of_basic_credentials() {
        use base64::Engine as _;

        let basic = |credentials: &str| {
            let encoded = base64::engine::general_purpose::STANDARD.encode(credentials);
            let mut headers = HeaderMap::new();
            headers.insert(
                AUTHORIZATION,
                HeaderValue::from_str(&format!("Basic {encoded}")).unwrap(),
            );
            keys().browser_role(&headers)
        };
        assert_eq!(basic("viewer:viewer-key-0123456789"), Ok(Role::Viewer));
        assert_eq!(basic(":operator-key-0123456789"), Ok(Role::Operator));
        assert_eq!(basic("anyone:viewer-key-0123456789"), Ok(Role::Viewer));
        // The user name is not the key.
        assert_eq!(basic("viewer-key-0123456789:"), Err(Denied::Malformed));
        assert_eq!(basic("viewer-key-0123456789"), Err(Denied::Malformed));
        assert_eq!(basic("viewer:wrong-key-0123456789"), Err(Denied::Invalid));
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, HeaderValue::from_static("Basic !!!"));
        assert_eq!(keys().browser_role(&headers), Err(Denied::Malformed));
        // The other forms work too; nothing is missing.
        headers.insert(
            AUTHORIZATION,
            HeaderValue::from_static("Bearer viewer-key-0123456789"),
        );
        assert_eq!(keys().browser_role(&headers), Ok(Role::Viewer));
        assert_eq!(keys().browser_role(&HeaderMap::new()), Err(Denied::Missing));
        // Only the page's paths read Basic credentials: elsewhere they stay a proxy's.
        assert_eq!(
            role(
                "authorization",
                b"Basic dmlld2VyOnZpZXdlci1rZXktMDEyMzQ1Njc4OQ=="
            ),
            Err(Denied::Scheme)
        );
    }
}
