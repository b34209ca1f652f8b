//! Free text (a reason, a stream prefix): which characters it may hold, and
//! how it is shown.
//!
//! Refused in input: control characters (Unicode category Cc), and the
//! format characters (category Cf) that make a line read other than it is:
//! the bidirectional controls, which reorder what follows them (U+202E
//! makes `history` print "deviLaV" for "Valid…"), and the invisible ones
//! that belong to no script (zero-width space, word joiner, invisible
//! operators, the byte order mark, the deprecated format controls,
//! interlinear annotation). The format characters that scripts and emoji
//! need are taken: the zero-width joiner and non-joiner (Persian, the Indic
//! scripts, emoji sequences), the soft hyphen, the Arabic, Syriac and
//! Mongolian signs. Every text line escapes the refused ones and the tag
//! characters (invisible ASCII look-alikes beyond the Basic Multilingual
//! Plane, which the contract's pattern dialect cannot name) as `\u{…}`
//! (`shown`), for text stored before this rule too.

use std::borrow::Cow;

/// The format characters refused in free text, as inclusive ranges: all in
/// the Basic Multilingual Plane, so the contract's pattern can name them.
pub const REFUSED_FORMAT_CHARACTERS: &[(char, char)] = &[
    ('\u{061C}', '\u{061C}'), // Arabic letter mark
    ('\u{200B}', '\u{200B}'), // zero-width space
    ('\u{200E}', '\u{200F}'), // left-to-right and right-to-left marks
    ('\u{202A}', '\u{202E}'), // embeddings and overrides
    ('\u{2060}', '\u{2064}'), // word joiner, invisible operators
    ('\u{2066}', '\u{206F}'), // isolates, deprecated format controls
    ('\u{FEFF}', '\u{FEFF}'), // byte order mark
    ('\u{FFF9}', '\u{FFFB}'), // interlinear annotation
];

/// Tag characters: invisible, beyond the Basic Multilingual Plane; shown
/// escaped, not refused.
const TAG_CHARACTERS: (char, char) = ('\u{E0000}', '\u{E007F}');

fn within(ranges: &[(char, char)], c: char) -> bool {
    ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&c))
}

/// Whether free text may not hold `c` (see the module).
pub fn refused(c: char) -> bool {
    c.is_control() || within(REFUSED_FORMAT_CHARACTERS, c)
}

/// Refuses `text` when it holds a character free text may not (`refused`),
/// naming the first.
pub fn check(field: &str, text: &str) -> Result<(), crate::domain::Rejection> {
    match text.chars().find(|&c| refused(c)) {
        None => Ok(()),
        Some(c) => Err(crate::domain::Rejection::invalid(
            field,
            format!(
                "must not contain control characters, nor bidirectional or invisible format characters (U+{:04X} is one)",
                c as u32
            ),
        )),
    }
}

/// Whether `c` is shown escaped: what free text may not hold, and tags.
fn hidden(c: char) -> bool {
    refused(c) || within(&[TAG_CHARACTERS], c)
}

/// `text` as a terminal should show it: control characters, the refused
/// format characters and tags as `\u{…}`, so nothing in it reorders,
/// hides or erases what surrounds it.
pub fn shown(text: &str) -> Cow<'_, str> {
    if !text.chars().any(hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if hidden(c) {
            out.push_str(&format!("\\u{{{:04x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bidi_invisible_and_control_characters_are_refused_what_scripts_need_is_not() {
        let cases = [
            ('\u{202E}', true),
            ('\u{2066}', true),
            ('\u{200B}', true),
            ('\u{200E}', true),
            ('\u{2060}', true),
            ('\u{200D}', false),
            ('\u{200C}', false),
            ('\u{00AD}', false),
            ('\u{0600}', false),
            ('\u{FEFF}', true),
            ('\u{0000}', true),
            ('\u{009B}', true),
            ('\u{E0041}', false),
            ('a', false),
            ('é', false),
            ('日', false),
            ('😀', false),
        ];
        for (c, refused_) in cases {
            assert_eq!(refused(c), refused_, "U+{:04X}", c as u32);
        }
    }

    #[test]
    fn every_format_character_is_shown_escaped() {
        assert_eq!(shown("plain text"), "plain text");
        assert_eq!(shown("a\u{202E}b"), "a\\u{202e}b");
        assert_eq!(shown("tag\u{E0041}"), "tag\\u{e0041}");
        assert_eq!(
            shown("\u{0645}\u{200C}\u{06CC}"),
            "\u{0645}\u{200C}\u{06CC}"
        );
        assert_eq!(shown("bell\u{7}"), "bell\\u{0007}");
    }
}
