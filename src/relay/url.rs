//! Broker URLs that carry credentials.
//!
//! A NATS URL may carry credentials (`nats://user:password@host:4222`, or a
//! token as `nats://token@host`). Whatever prints or logs a broker URL prints
//! `redacted(url)`, which keeps the scheme, host and port (what an operator
//! needs to tell brokers apart) and replaces the user information. The
//! client library is never handed the credentials inside the URL: it logs
//! the URLs it connects to (with the password, at debug level), and it does
//! not send a URL's credentials to the server either. `split` takes them
//! out, to be given to it as options.

/// Credentials taken out of a broker URL (percent-decoded).
#[derive(Clone, PartialEq, Eq)]
pub enum Credentials {
    User { user: String, password: String },
    Token(String),
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::User { user, .. } => write!(f, "User({user:?}, ***)"),
            Credentials::Token(_) => write!(f, "Token(***)"),
        }
    }
}

/// The URLs of a comma-separated list (as `async_nats` takes them). A comma
/// inside a password written unencoded (`nats://u:pa,ss@host`) would split
/// one URL in two, the first holding the password: pieces that start no URL
/// of their own (no `://`) are joined to the URL before them while that URL
/// has a scheme and no `@` yet and an `@` comes before the next URL.
fn urls(list: &str) -> Vec<String> {
    let pieces: Vec<&str> = list.split(',').collect();
    let mut out: Vec<String> = Vec::new();
    for (i, piece) in pieces.iter().enumerate() {
        let credentials_ahead = pieces[i..]
            .iter()
            .take_while(|p| !p.contains("://"))
            .any(|p| p.contains('@'));
        let continues = !piece.contains("://")
            && credentials_ahead
            && out
                .last()
                .is_some_and(|prev| prev.contains("://") && !prev.contains('@'));
        match out.last_mut() {
            Some(prev) if continues => {
                prev.push(',');
                prev.push_str(piece);
            }
            _ => out.push((*piece).to_owned()),
        }
    }
    out
}

/// `url` (a comma-separated list, as `async_nats` takes them) without user
/// information, and the credentials of the first URL that carries any.
pub fn split(url: &str) -> (String, Option<Credentials>) {
    let mut credentials = None;
    let bare = urls(url)
        .iter()
        .map(|one| {
            let (scheme, authority, tail) = parts(one);
            match authority.rfind('@') {
                Some(at) => {
                    if credentials.is_none() {
                        credentials = Some(match authority[..at].split_once(':') {
                            Some((user, password)) => Credentials::User {
                                user: decoded(user),
                                password: decoded(password),
                            },
                            None => Credentials::Token(decoded(&authority[..at])),
                        });
                    }
                    format!("{scheme}{}{tail}", &authority[at + 1..])
                }
                None => one.clone(),
            }
        })
        .collect::<Vec<_>>()
        .join(",");
    (bare, credentials)
}

/// The scheme with its `://` (or nothing), the authority, and the rest.
fn parts(url: &str) -> (&str, &str, &str) {
    let (scheme, rest) = match url.find("://") {
        Some(i) => url.split_at(i + 3),
        None => ("", url),
    };
    // The authority ends at the first '/', '?' or '#' after the user
    // information, which is whatever stands before the last '@': a password
    // written unencoded may hold any of those (`nats://u:s3cr/et@host`), and
    // a broker URL has no path or query in which an '@' would mean less.
    let from = rest.rfind('@').unwrap_or(0);
    let end = rest[from..]
        .find(['/', '?', '#'])
        .map_or(rest.len(), |i| from + i);
    let (authority, tail) = rest.split_at(end);
    (scheme, authority, tail)
}

/// Percent-decoding of user information (`%40` for an `@` in a password);
/// anything that does not decode to UTF-8 is kept as written.
fn decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_owned())
}

/// `url` with any user information replaced by `***`; each URL of a
/// comma-separated list (as `async_nats` takes them) is redacted.
pub fn redacted(url: &str) -> String {
    urls(url)
        .iter()
        .map(|one| redact_one(one))
        .collect::<Vec<_>>()
        .join(",")
}

fn redact_one(url: &str) -> String {
    // User information is whatever stands before the authority's last '@'
    // (a password written unencoded may itself hold '@').
    let (scheme, authority, tail) = parts(url);
    match authority.rfind('@') {
        Some(at) => format!("{scheme}***{}{tail}", &authority[at..]),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::{redacted, split, Credentials};

    #[test]
    fn credentials_are_taken_out_of_the_url() {
        assert_eq!(
            split("nats://relay:p%40ss@one:4222,nats://relay:p%40ss@two:4222"),
            (
                "nats://one:4222,nats://two:4222".to_owned(),
                Some(Credentials::User {
                    user: "relay".into(),
                    password: "p@ss".into()
                })
            )
        );
        assert_eq!(
            split("tls://t0ken@broker/x"),
            (
                "tls://broker/x".to_owned(),
                Some(Credentials::Token("t0ken".into()))
            )
        );
        assert_eq!(
            split("nats://broker:4222"),
            ("nats://broker:4222".to_owned(), None)
        );
        assert_eq!(
            split("nats://relay:s3cr/et@broker:4222"),
            (
                "nats://broker:4222".to_owned(),
                Some(Credentials::User {
                    user: "relay".into(),
                    password: "s3cr/et".into()
                })
            )
        );
        let shown = format!("{:?}", split("nats://u:s3cret@h").1);
        assert!(!shown.contains("s3cret"), "{shown}");
    }

    #[test]
    fn user_information_never_shows() {
        let cases = [
            ("nats://user:s3cret@broker:4222", "nats://***@broker:4222"),
            ("nats://t0ken@broker", "nats://***@broker"),
            ("tls://u:p@ss@broker:4222/x?y", "tls://***@broker:4222/x?y"),
            ("user:s3cret@broker:4222", "***@broker:4222"),
            ("nats://relay:s3cr/et@broker:4222", "nats://***@broker:4222"),
            ("nats://relay:s3cr?et@broker:4222", "nats://***@broker:4222"),
            (
                "nats://relay:s3cr#et@broker:4222/x",
                "nats://***@broker:4222/x",
            ),
            ("nats://s3cr/et@broker", "nats://***@broker"),
            ("nats://relay:hunter2,@broker", "nats://***@broker"),
            (
                "nats://relay:s3,cr,et@one,nats://two",
                "nats://***@one,nats://two",
            ),
            (
                "nats://a:s3cret@one:4222,nats://b:s3cret@two:4222",
                "nats://***@one:4222,nats://***@two:4222",
            ),
        ];
        for (url, shown) in cases {
            assert_eq!(redacted(url), shown, "{url}");
            assert!(!redacted(url).contains("s3cret"), "{url}");
        }
    }

    #[test]
    fn a_url_without_credentials_is_shown_as_it_is() {
        for url in ["nats://127.0.0.1:4222", "broker:4222", "nats://h/a"] {
            assert_eq!(redacted(url), url);
        }
    }
}
