//! Properties of `Authorization` (and `X-Baldur-Admin-Key`) parsing: any header value is
//! answered without a panic, a role is granted only for a configured key, and a configured
//! key is recognised however the scheme is cased and padded.

use http::{HeaderMap, HeaderValue};
use proptest::prelude::*;

use super::{Denied, KeyDigests, LEGACY_KEY_HEADER, Role};

const OPERATOR: &str = "operator-key-0123456789";
const VIEWER: &str = "viewer-key-0123456789";

fn keys() -> KeyDigests {
    KeyDigests::new(Some(OPERATOR.as_bytes()), Some(VIEWER.as_bytes()))
}

fn header_map(authorization: Option<&[u8]>, legacy: Option<&[u8]>) -> Option<HeaderMap> {
    let mut headers = HeaderMap::new();
    if let Some(value) = authorization {
        headers.insert(
            http::header::AUTHORIZATION,
            HeaderValue::from_bytes(value).ok()?,
        );
    }
    if let Some(value) = legacy {
        headers.insert(LEGACY_KEY_HEADER, HeaderValue::from_bytes(value).ok()?);
    }
    Some(headers)
}

/// Header values: any bytes a header may carry, and near misses of the real forms.
fn value() -> impl Strategy<Value = Vec<u8>> {
    let near = (
        proptest::sample::select(vec![
            "Bearer", "bearer", "BEARER", "Basic", "Token", "", "Bearer:",
        ]),
        " {0,3}",
        proptest::sample::select(vec![OPERATOR, VIEWER, "", "operator-key-012345678", "x"]),
        "[ -~]{0,4}",
    )
        .prop_map(|(scheme, gap, key, tail)| format!("{scheme}{gap}{key}{tail}").into_bytes());
    prop_oneof![near, proptest::collection::vec(any::<u8>(), 0..64)]
}

proptest! {
    /// Any pair of header values is answered (a role or a refusal, never a panic), and a
    /// role is granted only to a value that carries that role's key.
    #[test]
    fn a_role_only_for_a_configured_key(authorization in proptest::option::of(value()), legacy in proptest::option::of(value())) {
        let Some(headers) = header_map(authorization.as_deref(), legacy.as_deref()) else {
            return Ok(());
        };
        let carries = |key: &str| {
            [&authorization, &legacy]
                .into_iter()
                .flatten()
                .any(|value| value.windows(key.len()).any(|window| window == key.as_bytes()))
        };
        match keys().role(&headers) {
            Ok(Role::Operator) => prop_assert!(carries(OPERATOR)),
            Ok(Role::Viewer) => prop_assert!(carries(VIEWER)),
            Ok(Role::Anonymous) => prop_assert!(false, "anonymous is never granted by a key"),
            Err(Denied::Missing) => prop_assert!(authorization.is_none() && legacy.is_none()),
            Err(Denied::Malformed | Denied::Scheme | Denied::Invalid) => {}
        }
    }

    /// A configured key is recognised with the scheme in any case and any padding of
    /// spaces; one byte more or less and it is not.
    #[test]
    fn the_bearer_form_in_any_case_and_padding(
        upper in proptest::collection::vec(any::<bool>(), 6),
        before in " {0,3}",
        gap in " {1,4}",
        after in " {0,3}",
        viewer in any::<bool>(),
        change in 0usize..3,
    ) {
        let scheme: String = "bearer"
            .chars()
            .zip(upper)
            .map(|(c, upper)| if upper { c.to_ascii_uppercase() } else { c })
            .collect();
        let (key, role) = if viewer { (VIEWER, Role::Viewer) } else { (OPERATOR, Role::Operator) };
        let value = format!("{before}{scheme}{gap}{key}{after}");
        let headers = header_map(Some(value.as_bytes()), None).unwrap();
        prop_assert_eq!(keys().role(&headers), Ok(role), "{:?}", value);
        let wrong = match change {
            0 => format!("{key}x"),
            1 => key[1..].to_owned(),
            _ => key.to_ascii_uppercase(),
        };
        let value = format!("{scheme}{gap}{wrong}");
        let headers = header_map(Some(value.as_bytes()), None).unwrap();
        prop_assert_eq!(keys().role(&headers), Err(Denied::Invalid), "{:?}", value);
    }

    /// Without keys configured, nobody is a viewer, whatever they send.
    #[test]
    fn without_keys_nobody_is_a_viewer(authorization in proptest::option::of(value()), legacy in proptest::option::of(value())) {
        let Some(headers) = header_map(authorization.as_deref(), legacy.as_deref()) else {
            return Ok(());
        };
        prop_assert!(!KeyDigests::default().grants_viewer(&headers));
    }
}
