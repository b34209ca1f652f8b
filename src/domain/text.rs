//! Free text (a reason, a stream prefix): which characters it may hold, and
//! how it is shown.
//!
//! Control characters (Unicode category Cc) and the format characters of the
//! Basic Multilingual Plane (category Cf: the bidirectional overrides and
//! isolates such as U+202E, zero-width spaces and joiners, the soft hyphen,
//! the byte order mark) are refused in input: they make a line read other
//! than it is (`history` printing "deviLaV" for "Valid…"). The format
//! characters beyond it (tags, musical and hieroglyph format controls) are
//! not refused, because the contract's pattern dialect (ECMA-262 without the
//! `u` flag) cannot name them; they reorder nothing, and every text output
//! escapes them with the rest (`shown`), as it does text stored before this
//! rule.

use std::borrow::Cow;

/// The format characters (Cf) of the Basic Multilingual Plane, as inclusive
/// ranges (Unicode 15.1).
pub const BMP_FORMAT_CHARACTERS: &[(char, char)] = &[
    ('\u{00AD}', '\u{00AD}'),
    ('\u{0600}', '\u{0605}'),
    ('\u{061C}', '\u{061C}'),
    ('\u{06DD}', '\u{06DD}'),
    ('\u{070F}', '\u{070F}'),
    ('\u{0890}', '\u{0891}'),
    ('\u{08E2}', '\u{08E2}'),
    ('\u{180E}', '\u{180E}'),
    ('\u{200B}', '\u{200F}'),
    ('\u{202A}', '\u{202E}'),
    ('\u{2060}', '\u{2064}'),
    ('\u{2066}', '\u{206F}'),
    ('\u{FEFF}', '\u{FEFF}'),
    ('\u{FFF9}', '\u{FFFB}'),
];

/// The format characters (Cf) beyond the Basic Multilingual Plane.
const ASTRAL_FORMAT_CHARACTERS: &[(char, char)] = &[
    ('\u{110BD}', '\u{110BD}'),
    ('\u{110CD}', '\u{110CD}'),
    ('\u{13430}', '\u{1343F}'),
    ('\u{1BCA0}', '\u{1BCA3}'),
    ('\u{1D173}', '\u{1D17A}'),
    ('\u{E0001}', '\u{E0001}'),
    ('\u{E0020}', '\u{E007F}'),
];

fn within(ranges: &[(char, char)], c: char) -> bool {
    ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&c))
}

/// Whether free text may not hold `c` (see the module).
pub fn refused(c: char) -> bool {
    c.is_control() || within(BMP_FORMAT_CHARACTERS, c)
}

/// Refuses `text` when it holds a control or format character (`refused`),
/// naming the first.
pub fn check(field: &str, text: &str) -> Result<(), crate::domain::Rejection> {
    match text.chars().find(|&c| refused(c)) {
        None => Ok(()),
        Some(c) => Err(crate::domain::Rejection::invalid(
            field,
            format!(
                "must not contain control or format characters (U+{:04X} is one)",
                c as u32
            ),
        )),
    }
}

/// Whether `c` is shown escaped: a control or any format character.
fn hidden(c: char) -> bool {
    c.is_control() || within(BMP_FORMAT_CHARACTERS, c) || within(ASTRAL_FORMAT_CHARACTERS, c)
}

/// `text` as a terminal should show it: control and format characters as
/// `\u{…}`, so nothing in it reorders, hides or erases what surrounds it.
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
    fn bidi_zero_width_and_control_characters_are_refused_letters_are_not() {
        let cases = [
            ('\u{202E}', true),
            ('\u{2066}', true),
            ('\u{200B}', true),
            ('\u{200D}', true),
            ('\u{00AD}', true),
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
        assert_eq!(shown("bell\u{7}"), "bell\\u{0007}");
    }
}
