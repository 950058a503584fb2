//! Set variables that no setting of this build reads: a typo
//! (`TOWER_HEALTH_READINESS_TIMOUT`) would otherwise leave the default in place without a
//! word.
//!
//! Each `from_env` knows only its own settings, so a name is weighed against every settings
//! type of the crate ([`known::READERS`](super::known::READERS)): a drain variable is not
//! unknown to `HealthConfig::from_env`. What becomes of an unread variable:
//!
//! - a warning ([`unread_warnings`]), unless it is a `BALDUR_*` name no setting has: a
//!   carried-over manifest sets many that this crate has no use for;
//! - an error at start in strict mode (`TOWER_HEALTH_STRICT_ENV`, [`refuse_unread_if_strict`]),
//!   `BALDUR_*` names included: strict mode is opt-in, for manifests cleared of the names
//!   this crate does not read;
//! - an error at start, strict mode or not, when it looks like a misspelt admin key
//!   ([`misspelt_key`]): a typo would otherwise start the admin server, or a layer with
//!   `Details::Authorized`, without keys.

use std::fmt;

use super::known::{KEYS, READERS, STRICT_ENV};
use super::{ConfigError, ConfigWarning, Env};

/// The two families of names: ours, and those of the system this crate replaces. A name is
/// only ever matched against known names of its own family.
const FAMILIES: [&str; 2] = ["TOWER_HEALTH_", "BALDUR_"];

/// Our own names.
const OWN_PREFIX: &str = FAMILIES[0];

/// The most edits from an admin key's `BALDUR_*` name at which a name counts as a misspelling
/// of it: a swapped, doubled, dropped or wrong character or two (`BALDUR_ADMIN_KYE`). Any
/// more, and names a carried-over manifest sets for other uses would count (`BALDUR_API_KEY` and
/// `BALDUR_ADMIN_TOKEN` are 3 edits away). Our own names get the suggestion's budget: no
/// `TOWER_HEALTH_*` name is unread on purpose.
const BALDUR_KEY_TYPO_EDITS: usize = 2;

/// A set variable that no setting of this build reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Unread {
    pub(crate) name: String,
    pub(crate) why: Why,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Why {
    /// No setting has this name; the closest one that does, if any is close.
    Unknown { closest: Option<Closest> },
    /// What reads it is behind a feature this build does not have.
    CompiledOut {
        what: &'static str,
        feature: &'static str,
    },
}

/// The known name closest to a name no setting has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Closest {
    /// The name to suggest (for a prefix, with the rest of the unknown name after it).
    pub(crate) name: String,
    /// How many single-character edits away it is.
    pub(crate) edits: usize,
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unknown {
                closest: Some(closest),
            } => write!(f, "not read by any setting; did you mean {}?", closest.name),
            Self::Unknown { closest: None } => f.write_str("not read by any setting"),
            Self::CompiledOut { what, feature } => write!(
                f,
                "read by {what}, which this build does not include (feature `{feature}`)"
            ),
        }
    }
}

impl fmt::Display for Unread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is {}", self.name, self.why)
    }
}

impl Unread {
    /// Whether the variable is worth a warning: all but `BALDUR_*` names no setting has.
    fn is_worth_a_warning(&self) -> bool {
        match self.why {
            Why::Unknown { .. } => self.name.starts_with(OWN_PREFIX),
            Why::CompiledOut { .. } => true,
        }
    }
}

/// The variables of `env` that nothing in this build reads, sorted by name.
pub(crate) fn unread_variables(env: &Env) -> Vec<Unread> {
    env.set_names()
        .into_iter()
        .filter_map(|name| {
            let why = match READERS.iter().find(|reader| reader.reads(name)) {
                Some(reader) => Why::CompiledOut {
                    what: reader.what,
                    feature: reader.missing_feature()?,
                },
                None if FAMILIES.iter().any(|family| name.starts_with(family)) => Why::Unknown {
                    closest: closest(name),
                },
                None => return None,
            };
            Some(Unread {
                name: name.to_owned(),
                why,
            })
        })
        .collect()
}

/// The [unread variables](unread_variables) worth a warning, as warnings.
pub(crate) fn unread_warnings(env: &Env) -> Vec<ConfigWarning> {
    unread_variables(env)
        .into_iter()
        .filter(Unread::is_worth_a_warning)
        .map(|unread| ConfigWarning::new(&unread.name, unread.to_string()))
        .collect()
}

/// In strict mode (`TOWER_HEALTH_STRICT_ENV` true), the first [unread
/// variable](unread_variables) as an error; run by every `from_env` and `from_vars`.
pub(crate) fn refuse_unread_if_strict(env: &Env) -> Result<(), ConfigError> {
    if env.flag(STRICT_ENV)? != Some(true) {
        return Ok(());
    }
    match unread_variables(env).into_iter().next() {
        // The value is not shown: the name may be a misspelt key's.
        Some(unread) => Err(ConfigError::new(
            &unread.name,
            "<hidden>",
            format!("{}; {STRICT_ENV} refuses it", unread.why),
        )),
        None => Ok(()),
    }
}

/// The first set variable that looks like a misspelt admin key variable, with the name it
/// looks like: its closest known name is a key's, within the suggestion's budget for our own
/// names and [`BALDUR_KEY_TYPO_EDITS`] for the `BALDUR_*` ones.
pub(crate) fn misspelt_key(env: &Env) -> Option<(String, String)> {
    unread_variables(env)
        .into_iter()
        .find_map(|unread| match unread.why {
            Why::Unknown {
                closest: Some(closest),
            } if KEYS.names.contains(&closest.name.as_str())
                && (unread.name.starts_with(OWN_PREFIX)
                    || closest.edits <= BALDUR_KEY_TYPO_EDITS) =>
            {
                Some((unread.name, closest.name))
            }
            Why::Unknown { .. } | Why::CompiledOut { .. } => None,
        })
}

/// The known name of the same family closest to `name`, if at most half of the part after the
/// family's prefix has to change. A prefix (`TOWER_HEALTH_DATABASE_URL_`) is matched against
/// the start of `name` and suggested with the rest of `name` after it.
fn closest(name: &str) -> Option<Closest> {
    let family = FAMILIES.iter().find(|family| name.starts_with(*family))?;
    let mut best: Option<Closest> = None;
    let mut consider = |edits: usize, known: &str, suggestion: String| {
        let budget = known.len().saturating_sub(family.len()) / 2;
        let better = best.as_ref().is_none_or(|best| edits < best.edits);
        if edits <= budget && better {
            best = Some(Closest {
                name: suggestion,
                edits,
            });
        }
    };
    let same_family = |names: &'static [&'static str]| {
        names
            .iter()
            .copied()
            .filter(|known| known.starts_with(family))
    };
    for reader in READERS {
        for known in same_family(reader.names) {
            consider(edit_distance(name, known), known, known.to_owned());
        }
        for prefix in same_family(reader.prefixes) {
            // Every split of `name` into a head (a misspelt prefix) and a tail (the part of
            // the operator's choosing), the tail never empty; on a tie the longest tail wins.
            for (split, _) in name.char_indices().skip(1) {
                let (head, tail) = name.split_at(split);
                consider(
                    edit_distance(head, prefix),
                    prefix,
                    format!("{prefix}{tail}"),
                );
            }
        }
    }
    best
}

/// The Levenshtein distance: the fewest single-character insertions, deletions and
/// substitutions that turn `a` into `b`.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    // `row[j]` is the distance between the part of `a` read so far and `b[..j]`.
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, a_char) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &b_char) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(a_char != b_char);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Env {
        Env::from_vars(vars.iter().copied())
    }

    /// The warnings about the unread variables of `vars`.
    fn unread(vars: &[(&str, &str)]) -> Vec<String> {
        unread_warnings(&env(vars))
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// What strict mode says of `vars`.
    fn strict(vars: &[(&str, &str)]) -> Result<(), String> {
        let mut vars = vars.to_vec();
        vars.push(("TOWER_HEALTH_STRICT_ENV", "true"));
        refuse_unread_if_strict(&env(&vars)).map_err(|error| error.to_string())
    }

    #[test]
    fn edit_distance_counts_single_character_edits() {
        assert_eq!(edit_distance("", ""), 0);
        assert_eq!(edit_distance("abc", ""), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("TIMOUT", "TIMEOUT"), 1);
        assert_eq!(edit_distance("ab", "ba"), 2);
    }

    #[test]
    fn a_misspelt_name_gets_the_closest_known_one() {
        assert_eq!(
            unread(&[("TOWER_HEALTH_READINESS_TIMOUT", "300ms")]),
            [
                "TOWER_HEALTH_READINESS_TIMOUT is not read by any setting; did you mean TOWER_HEALTH_READINESS_TIMEOUT?"
            ]
        );
        assert_eq!(
            unread(&[("TOWER_HEALTH_DRAIN_DELAI", "5s")]),
            [
                "TOWER_HEALTH_DRAIN_DELAI is not read by any setting; did you mean TOWER_HEALTH_DRAIN_DELAY?"
            ]
        );
        // A misspelt prefix keeps the operator's part of the name.
        assert_eq!(
            unread(&[("TOWER_HEALTH_DATABASE_URI_REPLICA", "postgres://db/app")]),
            [
                "TOWER_HEALTH_DATABASE_URI_REPLICA is not read by any setting; did you mean TOWER_HEALTH_DATABASE_URL_REPLICA?"
            ]
        );
        assert_eq!(
            unread(&[("TOWER_HEALTH_DATABASE_URLREPLICA", "postgres://db/app")]),
            [
                "TOWER_HEALTH_DATABASE_URLREPLICA is not read by any setting; did you mean TOWER_HEALTH_DATABASE_URL_REPLICA?"
            ]
        );
    }

    #[test]
    fn a_name_like_none_gets_no_suggestion() {
        assert_eq!(
            unread(&[("TOWER_HEALTH_FROBNICATE", "1")]),
            ["TOWER_HEALTH_FROBNICATE is not read by any setting"]
        );
    }

    #[test]
    fn names_every_settings_type_reads_are_known_and_others_ignored() {
        let known = [
            ("TOWER_HEALTH_READINESS_TIMEOUT", "300ms"),
            ("TOWER_HEALTH_DATABASE_URL_REPLICA", "postgres://db/app"),
            ("TOWER_HEALTH_DRAIN_DELAY", "5s"),
            ("BALDUR_SQL_DSN", "postgres://db/app"),
            // Baldur's other names, and empty values (unset), are no concern.
            ("BALDUR_SOMETHING_ELSE", "1"),
            ("TOWER_HEALTH_UNSET", " "),
        ];
        assert_eq!(unread(&known), Vec::<String>::new());
    }

    #[cfg(feature = "admin")]
    #[test]
    fn admin_names_are_known_with_the_admin_feature() {
        assert_eq!(
            unread(&[
                ("TOWER_HEALTH_ADMIN_PORT", "9090"),
                ("BALDUR_ADMIN_KEY", "k")
            ]),
            Vec::<String>::new()
        );
    }

    #[cfg(not(feature = "admin"))]
    #[test]
    fn admin_names_without_the_admin_feature_say_so() {
        assert_eq!(
            unread(&[
                ("TOWER_HEALTH_ADMIN_PORT", "9090"),
                ("BALDUR_ADMIN_KEY", "k")
            ]),
            // The keys are read by `AccessKeys` in every build (`Details::Authorized`).
            [
                "TOWER_HEALTH_ADMIN_PORT is read by the admin server, which this build does not include (feature `admin`)"
            ]
        );
    }

    #[test]
    fn strict_mode_refuses_an_unread_variable_naming_the_closest_known_one() {
        assert_eq!(
            strict(&[("TOWER_HEALTH_READINESS_TIMOUT", "300ms")]),
            Err("TOWER_HEALTH_READINESS_TIMOUT=\"<hidden>\": not read by any setting; did you mean TOWER_HEALTH_READINESS_TIMEOUT?; TOWER_HEALTH_STRICT_ENV refuses it".to_owned())
        );
        // Baldur's names too: strict mode is for manifests that set only what is read.
        assert_eq!(
            strict(&[("BALDUR_SQL_DNS", "postgres://db/app")]),
            Err("BALDUR_SQL_DNS=\"<hidden>\": not read by any setting; did you mean BALDUR_SQL_DSN?; TOWER_HEALTH_STRICT_ENV refuses it".to_owned())
        );
        assert_eq!(
            strict(&[("BALDUR_SOMETHING_ELSE", "1")]),
            Err("BALDUR_SOMETHING_ELSE=\"<hidden>\": not read by any setting; TOWER_HEALTH_STRICT_ENV refuses it".to_owned())
        );
    }

    #[test]
    fn strict_mode_lets_known_names_through_and_is_off_by_default() {
        let known = [
            ("TOWER_HEALTH_READINESS_TIMEOUT", "300ms"),
            ("TOWER_HEALTH_DATABASE_URL_REPLICA", "postgres://db/app"),
            ("TOWER_HEALTH_DRAIN_DELAY", "5s"),
            ("BALDUR_SQL_DSN", "postgres://db/app"),
            ("BALDUR_ADMIN_KEY", "k"),
            ("TOWER_HEALTH_UNSET", " "),
            ("UNRELATED", "1"),
        ];
        assert_eq!(strict(&known), Ok(()));
        for off in [None, Some("false"), Some("0")] {
            let mut vars = vec![("TOWER_HEALTH_FROBNICATE", "1")];
            vars.extend(off.map(|off| ("TOWER_HEALTH_STRICT_ENV", off)));
            assert_eq!(refuse_unread_if_strict(&env(&vars)), Ok(()), "{off:?}");
        }
        let error =
            refuse_unread_if_strict(&env(&[("TOWER_HEALTH_STRICT_ENV", "strict")])).unwrap_err();
        assert_eq!(error.variable(), "TOWER_HEALTH_STRICT_ENV");
    }

    #[cfg(not(feature = "admin"))]
    #[test]
    fn strict_mode_refuses_a_variable_read_by_a_feature_left_out() {
        assert_eq!(
            strict(&[("TOWER_HEALTH_ADMIN_PORT", "9090")]),
            Err("TOWER_HEALTH_ADMIN_PORT=\"<hidden>\": read by the admin server, which this build does not include (feature `admin`); TOWER_HEALTH_STRICT_ENV refuses it".to_owned())
        );
    }

    #[test]
    fn a_name_close_to_an_admin_key_variable_is_a_misspelt_key() {
        for (name, intended) in [
            ("TOWER_HEALTH_ADMIN_KYE", "TOWER_HEALTH_ADMIN_KEY"),
            ("TOWER_HEALTH_ADMIN_KEYS", "TOWER_HEALTH_ADMIN_KEY"),
            ("TOWER_HEALTH_ADMIN_TOKEN", "TOWER_HEALTH_ADMIN_KEY"),
            (
                "TOWER_HEALTH_READONLY_KEY",
                "TOWER_HEALTH_ADMIN_READONLY_KEY",
            ),
            ("BALDUR_ADMIN_KYE", "BALDUR_ADMIN_KEY"),
            ("BALDUR_ADMINKEY", "BALDUR_ADMIN_KEY"),
            ("BALDUR_ADMIN_READONLY_KYE", "BALDUR_ADMIN_READONLY_KEY"),
        ] {
            assert_eq!(
                misspelt_key(&env(&[(name, "k")])),
                Some((name.to_owned(), intended.to_owned())),
                "{name}"
            );
        }
    }

    #[test]
    fn other_names_are_no_misspelt_key() {
        for name in [
            // Known names, and names closer to another setting.
            "TOWER_HEALTH_ADMIN_KEY",
            "BALDUR_ADMIN_READONLY_KEY",
            "TOWER_HEALTH_ADMIN_HOST",
            "BALDUR_ADMIN_HOST",
            // Baldur's names more than a typo away from a key: Baldur may set them.
            "BALDUR_API_KEY",
            "BALDUR_ADMIN_TOKEN",
            "BALDUR_ADMIN_USER",
            "OTHER_ADMIN_KEY",
        ] {
            assert_eq!(misspelt_key(&env(&[(name, "k")])), None, "{name}");
        }
    }
}
