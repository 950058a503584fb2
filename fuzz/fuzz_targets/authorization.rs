//! `Authorization` and `X-Baldur-Admin-Key` parsing: any header values. A role is granted
//! only to values that carry that role's key.
//!
//! Input: `authorization\0legacy` (either may be missing).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tower_health::__fuzz;

const OPERATOR: &[u8] = b"operator-key-0123456789";
const VIEWER: &[u8] = b"viewer-key-0123456789";

fn carries(value: Option<&[u8]>, key: &[u8]) -> bool {
    value.is_some_and(|value| value.windows(key.len()).any(|window| window == key))
}

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(3, |&byte| byte == 0);
    let authorization = parts.next().filter(|value| !value.is_empty());
    let legacy = parts.next().filter(|value| !value.is_empty());
    let Some(role) = __fuzz::authorization_role(OPERATOR, VIEWER, authorization, legacy) else {
        return;
    };
    let carried = carries(authorization, OPERATOR) || carries(legacy, OPERATOR);
    let carried_viewer = carries(authorization, VIEWER) || carries(legacy, VIEWER);
    match role {
        Ok("operator") => assert!(carried, "{data:?}"),
        Ok("viewer") => assert!(carried_viewer, "{data:?}"),
        Ok(other) => panic!("{other} granted to {data:?}"),
        Err("missing") => assert!(authorization.is_none() && legacy.is_none()),
        Err(_) => {}
    }
});
