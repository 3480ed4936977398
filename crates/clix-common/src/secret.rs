//! A value that must never be shown: API keys and tokens in settings, and
//! the rule for names that hold one.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Name fragments that mark a variable, flag or parameter as secret
/// (compared upper-case, `.` read as `_`). A database URL names its
/// password: `DATABASE_URL` by the common convention, `CLIX_STORAGE_URL`
/// (`storage.url`) by ours.
const SECRET_MARKERS: &[&str] =
    &["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "DATABASE_URL", "STORAGE_URL"];

/// True for names like `OPENAI_API_KEY`, `GH_TOKEN`, `db_password`,
/// `DATABASE_URL`, `storage.url`: the one rule for what the sandbox's
/// environment and clip's host children leave out, and what the audit log,
/// `clix config show` and the hub's parameters hide.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase().replace('.', "_");
    SECRET_MARKERS.iter().any(|m| upper.contains(m))
}

/// A connection URL as it may be shown: its password (`user:PASSWORD@`,
/// and a `password=` parameter) replaced by `***`, everything else kept so
/// that a person can tell which server and database it names.
/// `postgres://clix:s3cret@db:5432/mem?sslmode=disable` shows as
/// `postgres://clix:***@db:5432/mem?sslmode=disable`. The user part ends at
/// the last `@` of the URL: a password with an unescaped `@` or `/` is
/// hidden whole (more is hidden, never less).
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return redact_params(url) };
    let (userinfo, after) = match rest.rfind('@') {
        Some(at) => (Some(&rest[..at]), &rest[at + 1..]),
        None => (None, rest),
    };
    let user = userinfo.map(|u| match u.split_once(':') {
        Some((name, _)) => format!("{name}:***@"),
        None => format!("{u}@"),
    });
    format!("{scheme}://{}{}", user.unwrap_or_default(), redact_params(after))
}

/// `password=…` parameters (a URL's query, or key=value words) as `password=***`.
fn redact_params(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.to_ascii_lowercase().find("password=") {
        let value = at + "password=".len();
        out.push_str(&rest[..value]);
        out.push_str("***");
        let end = rest[value..].find(['&', ' ', '#']).map_or(rest.len(), |e| value + e);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// A value that must not be shown: Debug, Display and Serialize give `***`;
/// [`Secret::expose`] gives the value to the one place that sends it.
///
/// An empty secret is no secret (nothing is set), so it serializes as `""`:
/// the layered config serializes the defaults to learn the settings' shape,
/// and a default of `***` would read back as a key.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value read from a config file, a secret store or a flag.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value itself, for the one place that uses it (a header, a child's environment).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// What Debug, Display and Serialize show.
    fn shown(&self) -> &'static str {
        if self.0.is_empty() { "" } else { "***" }
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret(value.to_string())
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret({})", self.shown())
    }
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.shown())
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.shown())
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Secret)
    }
}

#[cfg(test)]
mod tests {
    use super::{Secret, is_secret_name, redact_url};

    #[test]
    fn urls_show_everything_but_the_password() {
        for (url, shown) in [
            ("postgres://clix:s3cret@db:5432/mem?sslmode=disable", "postgres://clix:***@db:5432/mem?sslmode=disable"),
            ("postgresql://clix@db/mem", "postgresql://clix@db/mem"),
            ("postgres://db/mem?user=clix&password=s3cret&x=1", "postgres://db/mem?user=clix&password=***&x=1"),
            ("postgres://clix:p@ss/w@rd@db/mem", "postgres://clix:***@db/mem"),
            ("postgres://%2Frun%2Fpg/mem", "postgres://%2Frun%2Fpg/mem"),
            ("host=db password=s3cret user=clix", "host=db password=*** user=clix"),
            ("/home/me/.local/share/clix/memory.sqlite", "/home/me/.local/share/clix/memory.sqlite"),
        ] {
            assert_eq!(redact_url(url), shown, "{url}");
            assert!(!redact_url(url).contains("s3cret") && !redact_url(url).contains("rd@"), "{url}");
        }
    }

    /// What leaves the environment at start (and never reaches a sandbox),
    /// case-insensitively, and what clix reads as plain settings.
    #[test]
    fn secret_names_table() {
        for (name, secret) in [
            ("OPENAI_API_KEY", true),
            ("MY_SECRET_TOKEN", true),
            ("GH_TOKEN", true),
            ("db_password", true),
            ("AWS_SECRET_ACCESS_KEY", true),
            ("api-token", true),
            ("KEYBOARD", true),
            ("DATABASE_URL", true),
            ("CLIX_STORAGE_URL", true),
            ("storage.url", true),
            ("ANTHROPIC_API_KEY", true),
            ("AGENT_API_KEY", true),
            ("CLIX_MEMORY_API_KEY", true),
            ("CLIX_AGENT_API_KEY", true),
            ("CLIX_MCP_TOKEN", true),
            ("CLIX_HUB_ENV_GH_TOKEN", true),
            ("MY_TOKEN", true),
            ("my_token", true),
            ("GITHUB_TOKEN_RO", true),
            ("client_secret", true),
            ("DB_PASSWORD", true),
            ("PgPassword", true),
            ("ssh_key", true),
            ("AGENT_BASE_URL", false),
            ("PATH", false),
            ("LANG", false),
            ("HOME", false),
            ("CLIX_HOME", false),
            ("CLIX_HUB_PATH", false),
            ("CLIX_SANDBOX_MODE", false),
            ("OPENAI_BASE_URL", false),
            ("AGENT_MODEL", false),
            ("NO_COLOR", false),
            ("XDG_CONFIG_HOME", false),
        ] {
            assert_eq!(is_secret_name(name), secret, "{name}");
        }
    }

    #[test]
    fn a_set_secret_never_shows_its_value() {
        let key = Secret::new("sk-live-1234");
        for shown in [format!("{key:?}"), key.to_string(), serde_json::to_string(&key).unwrap()] {
            assert!(!shown.contains("sk-live"), "{shown}");
            assert!(shown.contains("***"), "{shown}");
        }
        assert_eq!(key.expose(), "sk-live-1234");
    }

    #[test]
    fn an_empty_secret_reads_back_empty() {
        let none = Secret::default();
        let text = serde_json::to_string(&none).unwrap();
        assert_eq!(serde_json::from_str::<Secret>(&text).unwrap(), none);
        assert_eq!(serde_json::from_str::<Secret>("\"k\"").unwrap().expose(), "k");
    }
}
