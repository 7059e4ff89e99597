//! The inverted index and the query over it.
//!
//! Documents are numbered in reference order, so "lower number" is "reference ascending" and
//! the final tie-break is an integer comparison. Posting lists are sorted by document, each
//! document's fields are pre-summed at build time, and scores are summed in query-word order,
//! so the same query over the same documents adds the same floating-point numbers in the same
//! order every time, and an explanation recomputes exactly the score it explains.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, DefaultHasher};

use cua_artifact::{CapabilityRef, RiskTier, SurfaceKind};

use super::text::terms;
use super::typo::{MAX_DISTANCE, allowed_distance, damerau_levenshtein, deletions};
use super::{
    B, Explanation, Field, FieldMatch, K1, MAX_QUERY_WORDS, QueryWord, Resolution, SearchDocument,
    SearchHit, SearchQuery, SearchResults, Signal, TYPO_DISCOUNT,
};

/// A hash map with a fixed hasher: lookups only, never iterated into a result, and no random
/// seed drawn.
type FixedMap<K, V> = HashMap<K, V, BuildHasherDefault<DefaultHasher>>;

const FIELD_COUNT: usize = Field::ALL.len();

/// The built index. Cheap to query, immutable once built.
#[derive(Debug, Clone)]
pub struct SearchIndex {
    documents: Vec<Stored>,
    /// Term text by term number; terms are numbered in sorted order.
    vocabulary: Vec<String>,
    term_numbers: FixedMap<String, u32>,
    /// By term number: every (document, field) the term occurs in, sorted by document then
    /// field.
    postings: Vec<PostingList>,
    /// By term number: how many documents hold the term in any field.
    document_frequency: Vec<u32>,
    /// Deletion key → the terms indexed under it, ascending.
    deletions: FixedMap<String, Vec<u32>>,
    /// By document: what the filters read, packed together so that filtering thousands of
    /// matches touches a few kilobytes instead of every stored document.
    attributes: Vec<Attributes>,
}

#[derive(Debug, Clone)]
struct Stored {
    reference: CapabilityRef,
    title: String,
    max_risk: RiskTier,
    surface: SurfaceKind,
    approved: bool,
}

#[derive(Debug, Clone, Copy)]
struct Attributes {
    max_risk: RiskTier,
    surface: SurfaceKind,
    approved: bool,
}

/// One term's occurrences as parallel columns. Scoring reads one entry per document
/// (`scored_documents`, `document_weights`); the explanation reads one entry per field.
#[derive(Debug, Clone, Default)]
struct PostingList {
    /// The documents holding the term, ascending.
    scored_documents: Vec<u32>,
    /// By document: the sum over its fields of `weighted_saturation`.
    document_weights: Vec<f64>,
    /// One entry per (document, field), sorted by document then field.
    documents: Vec<u32>,
    /// `field_weight × tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen))`: everything of BM25 that
    /// does not depend on the query, computed once at build time.
    weighted_saturation: Vec<f64>,
    fields: Vec<Field>,
    frequencies: Vec<u32>,
}

/// A query word resolved to a term.
struct Resolved {
    word_index: usize,
    term: u32,
    distance: usize,
}

impl SearchIndex {
    /// Indexes the documents. A reference given twice keeps its first document.
    pub fn build(mut documents: Vec<SearchDocument>) -> Self {
        documents.sort_by(|left, right| left.reference.cmp(&right.reference));
        documents.dedup_by(|later, earlier| later.reference == earlier.reference);

        // Terms per document and field, in field order.
        let analysed: Vec<[Vec<String>; FIELD_COUNT]> = documents
            .iter()
            .map(|document| {
                let joined = |parts: &[String]| terms(&parts.join(" "));
                [
                    terms(document.reference.id().as_str()),
                    terms(&document.title),
                    terms(&document.description),
                    joined(&document.inputs),
                    joined(&document.outputs),
                    joined(&document.outcomes),
                ]
            })
            .collect();

        let mut vocabulary: Vec<String> = analysed
            .iter()
            .flat_map(|fields| fields.iter().flatten().cloned())
            .collect();
        vocabulary.sort_unstable();
        vocabulary.dedup();
        let term_numbers: FixedMap<String, u32> = vocabulary
            .iter()
            .enumerate()
            .map(|(number, term)| (term.clone(), to_u32(number)))
            .collect();

        let count = analysed.len().max(1) as f64;
        let mut averages = [0.0f64; FIELD_COUNT];
        for field in Field::ALL {
            let total: usize = analysed
                .iter()
                .map(|fields| fields[field.position()].len())
                .sum();
            averages[field.position()] = total as f64 / count;
        }

        let mut postings: Vec<PostingList> = vec![PostingList::default(); vocabulary.len()];
        for (document, fields) in analysed.iter().enumerate() {
            for field in Field::ALL {
                let field_terms = &fields[field.position()];
                let average = averages[field.position()];
                let relative = if average > 0.0 {
                    field_terms.len() as f64 / average
                } else {
                    0.0
                };
                let norm = K1 * (1.0 - B + B * relative);
                let mut counted: Vec<(u32, u32)> = Vec::new();
                for term in field_terms {
                    let number = term_numbers[term];
                    match counted.iter_mut().find(|(seen, _)| *seen == number) {
                        Some((_, count)) => *count += 1,
                        None => counted.push((number, 1)),
                    }
                }
                for (number, frequency) in counted {
                    let tf = f64::from(frequency);
                    let weighted = field.weight() * tf * (K1 + 1.0) / (tf + norm);
                    let list = &mut postings[number as usize];
                    let document = to_u32(document);
                    if list.scored_documents.last() == Some(&document) {
                        if let Some(sum) = list.document_weights.last_mut() {
                            *sum += weighted;
                        }
                    } else {
                        list.scored_documents.push(document);
                        list.document_weights.push(weighted);
                    }
                    list.documents.push(document);
                    list.weighted_saturation.push(weighted);
                    list.fields.push(field);
                    list.frequencies.push(frequency);
                }
            }
        }
        let document_frequency = postings
            .iter()
            .map(|list| to_u32(list.scored_documents.len()))
            .collect();

        let mut deletion_index: FixedMap<String, Vec<u32>> = FixedMap::default();
        for (number, term) in vocabulary.iter().enumerate() {
            if term.chars().count() < 3 {
                continue;
            }
            for key in deletions(term, MAX_DISTANCE) {
                deletion_index.entry(key).or_default().push(to_u32(number));
            }
        }

        let attributes = documents
            .iter()
            .map(|document| Attributes {
                max_risk: document.max_risk,
                surface: document.surface,
                approved: document.approved,
            })
            .collect();
        Self {
            documents: documents
                .into_iter()
                .map(|document| Stored {
                    reference: document.reference,
                    title: document.title,
                    max_risk: document.max_risk,
                    surface: document.surface,
                    approved: document.approved,
                })
                .collect(),
            vocabulary,
            term_numbers,
            postings,
            document_frequency,
            deletions: deletion_index,
            attributes,
        }
    }

    /// How many documents are indexed.
    pub fn len(&self) -> usize {
        self.documents.len()
    }

    /// Whether nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.documents.is_empty()
    }

    /// How many distinct terms are indexed.
    pub fn vocabulary_size(&self) -> usize {
        self.vocabulary.len()
    }

    /// Runs a query: resolve words, score every matching document, drop those the filters
    /// refuse, and return the best `top_k` by score, then reference, each explained.
    pub fn search(&self, query: &SearchQuery) -> SearchResults {
        let mut words: Vec<String> = Vec::new();
        let mut ignored_words = Vec::new();
        for word in terms(&query.text) {
            if words.contains(&word) || ignored_words.contains(&word) {
                continue;
            }
            if words.len() < MAX_QUERY_WORDS {
                words.push(word);
            } else {
                ignored_words.push(word);
            }
        }

        let mut query_words = Vec::with_capacity(words.len());
        let mut resolved = Vec::with_capacity(words.len());
        for (word_index, word) in words.iter().enumerate() {
            let resolution = match self.term_numbers.get(word) {
                Some(&term) => {
                    resolved.push(Resolved {
                        word_index,
                        term,
                        distance: 0,
                    });
                    Resolution::Exact
                }
                None => {
                    let resolution = self.correct(word);
                    if let Resolution::Corrected { term, distance } = &resolution {
                        resolved.push(Resolved {
                            word_index,
                            term: self.term_numbers[term],
                            distance: *distance,
                        });
                    }
                    resolution
                }
            };
            query_words.push(QueryWord {
                word: word.clone(),
                resolution,
            });
        }

        // Accumulate: lexical score and the set of query words matched, per document.
        let mut lexical = vec![0.0f64; self.documents.len()];
        let mut matched_words = vec![0u32; self.documents.len()];
        let mut touched: Vec<u32> = Vec::new();
        for resolved_word in &resolved {
            let scale = self.idf(resolved_word.term) * TYPO_DISCOUNT[resolved_word.distance];
            let bit = 1u32 << resolved_word.word_index;
            let list = &self.postings[resolved_word.term as usize];
            for (&document, &weighted) in list.scored_documents.iter().zip(&list.document_weights) {
                let position = document as usize;
                if matched_words[position] == 0 {
                    touched.push(document);
                }
                matched_words[position] |= bit;
                lexical[position] += scale * weighted;
            }
        }

        let word_count = words.len().max(1) as f64;
        let mut filtered_out = 0;
        let mut ranked: Vec<(u32, f64)> = Vec::with_capacity(touched.len());
        for &document in &touched {
            let attributes = self.attributes[document as usize];
            if !query
                .filters
                .allow(attributes.max_risk, attributes.surface, attributes.approved)
            {
                filtered_out += 1;
                continue;
            }
            let coord = f64::from(matched_words[document as usize].count_ones()) / word_count;
            ranked.push((document, lexical[document as usize] * coord));
        }
        let order = |left: &(u32, f64), right: &(u32, f64)| {
            right.1.total_cmp(&left.1).then(left.0.cmp(&right.0))
        };
        if query.top_k < ranked.len() {
            if query.top_k == 0 {
                ranked.clear();
            } else {
                ranked.select_nth_unstable_by(query.top_k - 1, order);
                ranked.truncate(query.top_k);
            }
        }
        ranked.sort_unstable_by(order);

        let hits = ranked
            .into_iter()
            .map(|(document, score)| {
                self.hit(
                    document,
                    score,
                    &words,
                    &resolved,
                    matched_words[document as usize],
                )
            })
            .collect();
        SearchResults {
            words: query_words,
            ignored_words,
            matched: touched.len(),
            filtered_out,
            hits,
        }
    }

    /// The unique nearest vocabulary term within the word's allowed distance, if there is one.
    fn correct(&self, word: &str) -> Resolution {
        let characters: Vec<char> = word.chars().collect();
        let allowed = allowed_distance(characters.len());
        if allowed == 0 {
            return Resolution::Unknown;
        }
        let mut candidates: Vec<u32> = deletions(word, allowed)
            .iter()
            .filter_map(|key| self.deletions.get(key))
            .flatten()
            .copied()
            .collect();
        candidates.sort_unstable();
        candidates.dedup();
        let mut nearest: Option<usize> = None;
        let mut at_nearest: Vec<&str> = Vec::new();
        for number in candidates {
            let term = &self.vocabulary[number as usize];
            let term_characters: Vec<char> = term.chars().collect();
            if term_characters.len().abs_diff(characters.len()) > allowed {
                continue;
            }
            let distance = damerau_levenshtein(&characters, &term_characters);
            if distance > allowed {
                continue;
            }
            match nearest {
                Some(best) if distance > best => {}
                Some(best) if distance == best => at_nearest.push(term),
                _ => {
                    nearest = Some(distance);
                    at_nearest = vec![term];
                }
            }
        }
        match (nearest, at_nearest.as_slice()) {
            (Some(distance), [term]) => Resolution::Corrected {
                term: (*term).to_owned(),
                distance,
            },
            (Some(distance), terms) if !terms.is_empty() => Resolution::Ambiguous {
                distance,
                candidates: terms.iter().map(|term| (*term).to_owned()).collect(),
            },
            _ => Resolution::Unknown,
        }
    }

    /// BM25's inverse document frequency, the variant that is never negative.
    fn idf(&self, term: u32) -> f64 {
        let documents = self.documents.len() as f64;
        let frequency = f64::from(self.document_frequency[term as usize]);
        (1.0 + (documents - frequency + 0.5) / (frequency + 0.5)).ln()
    }

    /// A ranked document with its explanation, recomputed in the order it was accumulated.
    fn hit(
        &self,
        document: u32,
        score: f64,
        words: &[String],
        resolved: &[Resolved],
        matched_words: u32,
    ) -> SearchHit {
        let stored = &self.documents[document as usize];
        let mut matches = Vec::new();
        let mut lexical = 0.0;
        for resolved_word in resolved {
            let idf = self.idf(resolved_word.term);
            let discount = TYPO_DISCOUNT[resolved_word.distance];
            let scale = idf * discount;
            let list = &self.postings[resolved_word.term as usize];
            if let Ok(position) = list.scored_documents.binary_search(&document) {
                lexical += scale * list.document_weights[position];
            }
            let start = list.documents.partition_point(|&other| other < document);
            let end = start
                + list.documents[start..]
                    .iter()
                    .take_while(|&&other| other == document)
                    .count();
            for position in start..end {
                let contribution = scale * list.weighted_saturation[position];
                let field = list.fields[position];
                matches.push(FieldMatch {
                    word: words[resolved_word.word_index].clone(),
                    term: self.vocabulary[resolved_word.term as usize].clone(),
                    distance: resolved_word.distance,
                    field,
                    term_frequency: list.frequencies[position],
                    idf,
                    field_weight: field.weight(),
                    typo_discount: discount,
                    contribution,
                });
            }
        }
        let matched = matched_words.count_ones();
        let mut signals = vec![Signal {
            name: "coord",
            value: f64::from(matched) / words.len().max(1) as f64,
            detail: format!("{matched} of {} query words matched", words.len()),
        }];
        let corrections: Vec<String> = resolved
            .iter()
            .filter(|resolved_word| {
                resolved_word.distance > 0 && matched_words & (1 << resolved_word.word_index) != 0
            })
            .map(|resolved_word| {
                format!(
                    "{} → {} (distance {}, ×{})",
                    words[resolved_word.word_index],
                    self.vocabulary[resolved_word.term as usize],
                    resolved_word.distance,
                    TYPO_DISCOUNT[resolved_word.distance]
                )
            })
            .collect();
        if !corrections.is_empty() {
            let value = resolved
                .iter()
                .filter(|resolved_word| matched_words & (1 << resolved_word.word_index) != 0)
                .map(|resolved_word| TYPO_DISCOUNT[resolved_word.distance])
                .fold(f64::INFINITY, f64::min);
            signals.push(Signal {
                name: "typo",
                value,
                detail: format!(
                    "corrected {}; applied inside the lexical score",
                    corrections.join(", ")
                ),
            });
        }
        SearchHit {
            reference: stored.reference.clone(),
            title: stored.title.clone(),
            max_risk: stored.max_risk,
            surface: stored.surface,
            approved: stored.approved,
            score,
            explanation: Explanation {
                lexical,
                matches,
                signals,
            },
        }
    }
}

fn to_u32(value: usize) -> u32 {
    u32::try_from(value).expect("the index holds fewer than 2^32 documents and terms")
}
