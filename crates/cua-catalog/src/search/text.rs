//! How text becomes index terms: lowercase runs of letters and digits, so ids split on `.` and
//! `_` like prose splits on spaces, minus one-character fragments and a short list of English
//! function words. No stemming: a plural reaches its singular through typo tolerance, and says
//! so in the explanation.

/// Words that carry no intent, sorted for binary search.
const STOPWORDS: [&str; 26] = [
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "for", "from", "has", "i", "in", "into",
    "is", "it", "its", "me", "my", "of", "on", "or", "the", "to", "with",
];

/// The index terms of `text`, in order, repeats kept.
pub(crate) fn terms(text: &str) -> Vec<String> {
    let mut terms = Vec::new();
    let mut current = String::new();
    for character in text.chars() {
        if character.is_alphanumeric() {
            current.extend(character.to_lowercase());
        } else if !current.is_empty() {
            push_term(&mut terms, std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        push_term(&mut terms, current);
    }
    terms
}

fn push_term(terms: &mut Vec<String>, term: String) {
    if term.chars().nth(1).is_some() && STOPWORDS.binary_search(&term.as_str()).is_err() {
        terms.push(term);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stopwords_are_sorted() {
        let mut sorted = STOPWORDS;
        sorted.sort_unstable();
        assert_eq!(sorted, STOPWORDS);
    }

    #[test]
    fn ids_and_prose_split_alike() {
        assert_eq!(
            terms("corebank.member.savings_balance"),
            ["corebank", "member", "savings", "balance"]
        );
        assert_eq!(
            terms("Look up a member's Savings-Balance, as of 2026!"),
            ["look", "up", "member", "savings", "balance", "2026"]
        );
        assert_eq!(terms("ÜBER straße"), ["über", "straße"]);
    }
}
