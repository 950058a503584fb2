//! The start-up warning about set variables that no setting of this build reads: a typo
//! (`TOWER_HEALTH_READINESS_TIMOUT`) would otherwise leave the default in place without a
//! word.
//!
//! Each `from_env` knows only its own settings, so the warning weighs a name against every
//! settings type of the crate ([`known::READERS`](super::known::READERS)): a drain variable is
//! not unknown to `HealthConfig::from_env`. It is logged once per process, by whichever
//! `from_env` runs first.

use std::fmt;
use std::sync::Once;

use super::Env;
use super::known::READERS;

/// Our names; `BALDUR_*` names are Baldur's, which sets many we have no use for.
const OWN_PREFIX: &str = "TOWER_HEALTH_";

/// A set variable that no setting of this build reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Unread {
    pub(crate) name: String,
    pub(crate) why: Why,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Why {
    /// No setting has this name; the closest one that does, if any is close.
    Unknown { closest: Option<String> },
    /// What reads it is behind a feature this build does not have.
    CompiledOut {
        what: &'static str,
        feature: &'static str,
    },
}

impl fmt::Display for Unread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = &self.name;
        match &self.why {
            Why::Unknown {
                closest: Some(closest),
            } => write!(
                f,
                "{name} is not read by any setting; did you mean {closest}?"
            ),
            Why::Unknown { closest: None } => write!(f, "{name} is not read by any setting"),
            Why::CompiledOut { what, feature } => write!(
                f,
                "{name} is read by {what}, which this build does not include (feature `{feature}`)"
            ),
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
                None if name.starts_with(OWN_PREFIX) => Why::Unknown {
                    closest: closest_name(name),
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

/// Logs [`unread_variables`] as warnings, the first time it is called in the process.
pub(crate) fn warn_unread_variables_once(env: &Env) {
    static WARNED: Once = Once::new();
    WARNED.call_once(|| {
        for unread in unread_variables(env) {
            tracing::warn!(variable = %unread.name, "{unread}");
        }
    });
}

/// The known name closest to `name`, if at most half of the part after `TOWER_HEALTH_` has
/// to change. A prefix (`TOWER_HEALTH_DATABASE_URL_`) is matched against the start of `name`
/// and suggested with the rest of `name` after it.
fn closest_name(name: &str) -> Option<String> {
    let mut best: Option<(usize, String)> = None;
    let mut consider = |distance: usize, known: &str, suggestion: String| {
        let budget = known.len().saturating_sub(OWN_PREFIX.len()) / 2;
        let better = best.as_ref().is_none_or(|(best, _)| distance < *best);
        if distance <= budget && better {
            best = Some((distance, suggestion));
        }
    };
    // Baldur's names are never suggested.
    let own = |names: &'static [&'static str]| {
        names
            .iter()
            .copied()
            .filter(|known| known.starts_with(OWN_PREFIX))
    };
    for reader in READERS {
        for known in own(reader.names) {
            consider(edit_distance(name, known), known, known.to_owned());
        }
        for prefix in own(reader.prefixes) {
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
    best.map(|(_, suggestion)| suggestion)
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

    fn unread(vars: &[(&str, &str)]) -> Vec<String> {
        unread_variables(&Env::from_vars(vars.iter().copied()))
            .iter()
            .map(ToString::to_string)
            .collect()
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
}
