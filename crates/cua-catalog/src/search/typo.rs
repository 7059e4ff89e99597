//! Typo tolerance by symmetric deletion. Every vocabulary term is indexed under itself and every
//! string left after deleting up to [`MAX_DISTANCE`] of its characters; a query word generates
//! its own deletions the same way. Two words within edit distance 2 always share one of those
//! keys, so the candidates are found by a few exact lookups instead of a scan of the vocabulary.
//! Sharing a key does not prove closeness, so each candidate is then confirmed with the true
//! Damerau–Levenshtein distance (insertions, deletions, substitutions and transpositions of
//! adjacent characters).

/// The largest edit distance ever corrected.
pub(crate) const MAX_DISTANCE: usize = 2;

/// The largest edit distance corrected for a word of `length` characters: none below three
/// characters (every two-letter word is two edits from every other), one up to four, two
/// beyond.
pub(crate) fn allowed_distance(length: usize) -> usize {
    match length {
        0..=2 => 0,
        3..=4 => 1,
        _ => MAX_DISTANCE,
    }
}

/// `word` and every distinct string left after deleting up to `max_deletions` characters,
/// sorted. Strings shorter than one character are not produced.
pub(crate) fn deletions(word: &str, max_deletions: usize) -> Vec<String> {
    let characters: Vec<char> = word.chars().collect();
    let mut out = vec![word.to_owned()];
    let mut frontier = vec![characters];
    for _ in 0..max_deletions {
        let mut next = Vec::new();
        for variant in &frontier {
            if variant.len() <= 1 {
                continue;
            }
            for skip in 0..variant.len() {
                let shorter: Vec<char> = variant
                    .iter()
                    .enumerate()
                    .filter(|(position, _)| *position != skip)
                    .map(|(_, character)| *character)
                    .collect();
                next.push(shorter);
            }
        }
        next.sort_unstable();
        next.dedup();
        out.extend(
            next.iter()
                .map(|variant| variant.iter().collect::<String>()),
        );
        frontier = next;
    }
    out.sort_unstable();
    out.dedup();
    out
}

pub(crate) use cua_artifact::suggest::damerau_levenshtein;

#[cfg(test)]
mod tests {
    use super::*;

    fn distance(left: &str, right: &str) -> usize {
        let left: Vec<char> = left.chars().collect();
        let right: Vec<char> = right.chars().collect();
        damerau_levenshtein(&left, &right)
    }

    #[test]
    fn distances() {
        let cases = [
            ("balance", "balance", 0),
            ("balnce", "balance", 1),
            ("blaance", "balance", 1),
            ("trasnfer", "transfer", 1),
            ("ca", "abc", 2),
            ("", "abc", 3),
            ("kitten", "sitting", 3),
            ("member", "number", 2),
            ("sving", "savings", 2),
        ];
        for (left, right, expected) in cases {
            assert_eq!(distance(left, right), expected, "{left} vs {right}");
            assert_eq!(distance(right, left), expected, "{right} vs {left}");
        }
    }

    #[test]
    fn deletions_include_the_word_and_stop_at_one_character() {
        assert_eq!(
            deletions("abc", 2),
            ["a", "ab", "abc", "ac", "b", "bc", "c"]
        );
        assert_eq!(deletions("ab", 2), ["a", "ab", "b"]);
        assert_eq!(deletions("aab", 1), ["aa", "aab", "ab"]);
    }

    #[test]
    fn words_within_two_edits_share_a_deletion() {
        let pairs = [
            ("balance", "balnce"),
            ("balance", "blaance"),
            ("transfer", "trasnfer"),
            ("savings", "svngs"),
            ("account", "acount"),
        ];
        for (word, typo) in pairs {
            let of_word = deletions(word, 2);
            let shared = deletions(typo, 2)
                .iter()
                .any(|key| of_word.binary_search(key).is_ok());
            assert!(shared, "{word} and {typo} share no deletion");
        }
    }
}
