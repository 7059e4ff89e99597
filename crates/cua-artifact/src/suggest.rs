//! "Did you mean": the nearest of a few known names to one that was not found, by
//! Damerau–Levenshtein distance (insertions, deletions, substitutions and transpositions of
//! adjacent characters). The catalog's typo-tolerant search confirms its candidates with the same
//! distance.

/// The candidate nearest to `word`, for a "did you mean": the one `word` is the last dotted
/// segment of (`savings_balance` for `corebank.member.savings_balance`), else the nearest
/// within an edit distance that fits `word`'s length (two up to twenty characters, more for
/// longer names, none under three). Ties go to the first candidate; `word` itself is never
/// suggested.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let characters: Vec<char> = word.chars().collect();
    let allowed = match characters.len() {
        0..=2 => 0,
        3..=4 => 1,
        length => (length / 10).max(2),
    };
    let mut best: Option<(usize, &'a str)> = None;
    for candidate in candidates {
        if candidate == word {
            continue;
        }
        // A name given without its namespace (`savings_balance`) or its suffix (`northgate`
        // for `northgate-fcu`) is that name.
        let unqualified = candidate.rsplit('.').next() == Some(word);
        let truncated = candidate
            .strip_prefix(word)
            .is_some_and(|rest| rest.starts_with(['-', '_', '.']));
        if !word.is_empty() && (unqualified || truncated) {
            return Some(candidate);
        }
        let distance = damerau_levenshtein(&characters, &candidate.chars().collect::<Vec<_>>());
        if distance <= allowed && best.is_none_or(|(nearest, _)| distance < nearest) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

/// The unrestricted Damerau–Levenshtein distance (Lowrance–Wagner), over characters.
pub fn damerau_levenshtein(left: &[char], right: &[char]) -> usize {
    let (rows, columns) = (left.len(), right.len());
    let infinity = rows + columns;
    let width = columns + 2;
    let mut table = vec![0usize; (rows + 2) * width];
    let at = |row: usize, column: usize| row * width + column;
    table[at(0, 0)] = infinity;
    for row in 0..=rows {
        table[at(row + 1, 0)] = infinity;
        table[at(row + 1, 1)] = row;
    }
    for column in 0..=columns {
        table[at(0, column + 1)] = infinity;
        table[at(1, column + 1)] = column;
    }
    // The last row in which each character of `left` was seen; words are short, so a list.
    let mut last_row: Vec<(char, usize)> = Vec::new();
    for row in 1..=rows {
        let mut last_match_column = 0;
        for column in 1..=columns {
            let earlier_row = last_row
                .iter()
                .find(|(character, _)| *character == right[column - 1])
                .map_or(0, |(_, seen)| *seen);
            let earlier_column = last_match_column;
            let cost = if left[row - 1] == right[column - 1] {
                last_match_column = column;
                0
            } else {
                1
            };
            let substitution = table[at(row, column)] + cost;
            let insertion = table[at(row + 1, column)] + 1;
            let deletion = table[at(row, column + 1)] + 1;
            let transposition = table[at(earlier_row, earlier_column)]
                + (row - earlier_row - 1)
                + 1
                + (column - earlier_column - 1);
            table[at(row + 1, column + 1)] =
                substitution.min(insertion).min(deletion).min(transposition);
        }
        match last_row
            .iter_mut()
            .find(|(character, _)| *character == left[row - 1])
        {
            Some(entry) => entry.1 = row,
            None => last_row.push((left[row - 1], row)),
        }
    }
    table[at(rows + 1, columns + 1)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_suggests_a_near_name_or_the_full_name_of_a_last_segment() {
        let ids = [
            "corebank.auth.sign_on",
            "corebank.member.savings_balance",
            "corebank.member.transfer_funds",
        ];
        let near = |word| closest(word, ids);
        assert_eq!(
            near("corebank.member.savings_balanc"),
            Some("corebank.member.savings_balance")
        );
        assert_eq!(
            near("corebank.member.savigns_balance"),
            Some("corebank.member.savings_balance")
        );
        assert_eq!(
            near("savings_balance"),
            Some("corebank.member.savings_balance")
        );
        assert_eq!(near("corebank.member.close_account"), None);
        assert_eq!(
            near("corebank.member.savings_balance"),
            None,
            "never itself"
        );
        let tenants = ["first-valley", "northgate-fcu"];
        assert_eq!(closest("northgate", tenants), Some("northgate-fcu"));
        assert_eq!(closest("northgate-fc", tenants), Some("northgate-fcu"));
        assert_eq!(closest("southgate", tenants), None);
        assert_eq!(closest("membr_id", ["member_id"]), Some("member_id"));
        assert_eq!(
            closest("id", ["ic"]),
            None,
            "no guess for a two-letter word"
        );
    }
}
