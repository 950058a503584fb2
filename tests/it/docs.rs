//! The docs a user copies from, held to the crate: every guide page listed wherever the guide
//! is (the crate root, the guide's own list, the README), and the page guide free of notes
//! for contributors. (The samples are doctests; the incident guide's log is held to a run in
//! `incident.rs`, the HAProxy guide's configuration to HAProxy in `haproxy.rs`.)

const GUIDE_RS: &str = include_str!("../../src/guide.rs");
const LIB_RS: &str = include_str!("../../src/lib.rs");
const GUIDE_MD: &str = include_str!("../../src/docs/guide.md");
const README: &str = include_str!("../../README.md");

/// The guide's pages: each `page!(name, "docs/<file>.md", ..)` of `src/guide.rs`.
fn pages() -> Vec<&'static str> {
    GUIDE_RS
        .lines()
        .filter_map(|line| line.trim().strip_prefix("page!("))
        .map(|rest| rest.split([',', ')']).next().unwrap().trim())
        .filter(|name| !name.is_empty())
        .collect()
}

/// How the README's list of topics names a page (`None`: a page for contributors, which the
/// README points to elsewhere). A page added to the guide fails here until it has a word.
fn readme_word(page: &str) -> Option<&'static str> {
    Some(match page {
        "serving" => "serving",
        "kubernetes" => "Kubernetes",
        "envoy" => "Envoy",
        "containers" => "containers",
        "bodies" => "the answers",
        "databases" => "databases",
        "components" => "components",
        "fleet" => "a fleet",
        "incident" => "incidents",
        "page" => "the operator's page",
        "grpc" => "gRPC",
        "haproxy" => "HAProxy",
        "proxies" => "nginx",
        "configuration" => "configuration",
        "migrating" => "migrating from Baldur",
        "hardening" => "hardening",
        "architecture" => return None,
        other => panic!("the guide's page `{other}` has no word in the README's list: add one"),
    })
}

#[test]
fn every_guide_page_is_listed_wherever_the_guide_is() {
    let pages = pages();
    assert!(pages.len() >= 15, "{pages:?}");
    let root = &LIB_RS[LIB_RS.find("//! # Guide").unwrap()..];
    let root = &root[..root.find("//! # Verdicts").unwrap()];
    let readme = &README[README.find("- [The guide]").unwrap()..];
    let readme = readme[..readme.find("\n- ").unwrap()].replace("\n ", "");
    for page in pages {
        assert!(
            root.contains(&format!("(guide::{page})")),
            "the crate root's guide list leaves out `{page}`"
        );
        assert!(
            GUIDE_MD.contains(&format!("]({page})")),
            "docs/guide.md leaves out `{page}`"
        );
        if let Some(word) = readme_word(page) {
            let listed = readme
                .split([':', ','])
                .map(|item| item.trim().trim_end_matches('.'))
                .any(|item| item == word);
            assert!(
                listed,
                "the README's topics leave out `{page}` ({word}): {readme}"
            );
        }
    }
}

/// The page guide is for the operator: where the screenshots are kept and how they are taken
/// again is the architecture page's.
#[test]
fn the_page_guide_has_no_notes_for_contributors() {
    let page = include_str!("../../src/docs/page.md");
    for note in [
        "tests/it",
        "src/docs/images",
        "PAGE_GUIDE_MINUTES",
        "--ignored",
        ".b64",
    ] {
        assert!(!page.contains(note), "the page guide names `{note}`");
    }
    let architecture = include_str!("../../src/docs/architecture.md");
    assert!(
        architecture.contains("PAGE_GUIDE_MINUTES"),
        "the notes moved there"
    );
}
