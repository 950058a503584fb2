//! The `nocache` query: any query string. A bypass is asked for when, and only when, one
//! `&`-separated pair asks for it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tower_health::__fuzz;

fuzz_target!(|query: &str| {
    let wanted = __fuzz::wants_nocache(Some(query));
    let any_pair = query
        .split('&')
        .any(|pair| __fuzz::wants_nocache(Some(pair)));
    assert_eq!(wanted, any_pair, "{query:?}");
    let pair_asks = |pair: &str| match pair.split_once('=') {
        None => pair == "nocache",
        Some((key, value)) => {
            key == "nocache" && (value.eq_ignore_ascii_case("true") || value == "1")
        }
    };
    assert_eq!(wanted, query.split('&').any(pair_asks), "{query:?}");
});
