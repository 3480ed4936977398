//! The XDG directory layout, or everything under `CLIX_HOME`.

use std::path::{Path, PathBuf};

/// Every place clix reads or writes user data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    /// `config.toml` (or the file given with `--config`).
    pub config_file: PathBuf,
    /// What the person writes: settings and hub folders.
    pub config_dir: PathBuf,
    /// What clix keeps for the person: memory, trajectories, the reply cache.
    pub data_dir: PathBuf,
    /// What clix keeps between runs for itself: the audit log, hub stats and
    /// self-test results, chat history.
    pub state_dir: PathBuf,
    /// What can be thrown away and made again.
    pub cache_dir: PathBuf,
}

impl Paths {
    /// Paths from the environment; `config_file` (from `--config`) wins for the file.
    pub fn from_env(config_file: Option<&Path>) -> Self {
        Self::resolve(|key| std::env::var_os(key).filter(|v| !v.is_empty()).map(PathBuf::from), config_file)
    }

    /// Everything under one folder, as `CLIX_HOME` lays it out: an eval
    /// attempt's or a benchmark's own home.
    pub fn at_home(home: &Path) -> Self {
        Self::resolve(|key| (key == "CLIX_HOME").then(|| home.to_path_buf()), None)
    }

    /// Where each MCP server's tool list is kept between sessions.
    pub fn mcp_tool_lists(&self) -> PathBuf {
        self.state_dir.join("mcp-tools")
    }

    fn resolve(var: impl Fn(&str) -> Option<PathBuf>, config_file: Option<&Path>) -> Self {
        let (config_dir, data_dir, state_dir, cache_dir) = match var("CLIX_HOME") {
            Some(home) => (home.clone(), home.join("data"), home.join("state"), home.join("cache")),
            None => {
                let user_home = var("HOME").unwrap_or_else(|| PathBuf::from("/"));
                let xdg = |key: &str, fallback: &str| {
                    var(key).filter(|p| p.is_absolute()).unwrap_or_else(|| user_home.join(fallback)).join("clix")
                };
                (
                    xdg("XDG_CONFIG_HOME", ".config"),
                    xdg("XDG_DATA_HOME", ".local/share"),
                    xdg("XDG_STATE_HOME", ".local/state"),
                    xdg("XDG_CACHE_HOME", ".cache"),
                )
            }
        };
        let config_file = config_file.map(Path::to_path_buf).unwrap_or_else(|| config_dir.join("config.toml"));
        Paths { config_file, config_dir, data_dir, state_dir, cache_dir }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn paths(vars: &[(&str, &str)], config: Option<&str>) -> Paths {
        let vars: HashMap<String, PathBuf> = vars.iter().map(|(k, v)| (k.to_string(), PathBuf::from(v))).collect();
        Paths::resolve(|k| vars.get(k).cloned(), config.map(Path::new))
    }

    #[test]
    fn clix_home_overrides_everything() {
        let p = paths(&[("CLIX_HOME", "/t/h"), ("XDG_DATA_HOME", "/x"), ("HOME", "/home/u")], None);
        assert_eq!(p.config_file, PathBuf::from("/t/h/config.toml"));
        assert_eq!(p.data_dir, PathBuf::from("/t/h/data"));
        assert_eq!(p.state_dir, PathBuf::from("/t/h/state"));
        assert_eq!(p.cache_dir, PathBuf::from("/t/h/cache"));
    }

    #[test]
    fn xdg_variables_then_home_fallbacks() {
        let p = paths(&[("HOME", "/home/u"), ("XDG_CONFIG_HOME", "/cfg"), ("XDG_STATE_HOME", "relative")], None);
        assert_eq!(p.config_file, PathBuf::from("/cfg/clix/config.toml"));
        assert_eq!(p.data_dir, PathBuf::from("/home/u/.local/share/clix"));
        // A relative XDG value is invalid by the spec and ignored.
        assert_eq!(p.state_dir, PathBuf::from("/home/u/.local/state/clix"));
        assert_eq!(p.cache_dir, PathBuf::from("/home/u/.cache/clix"));
    }

    #[test]
    fn at_home_is_the_clix_home_layout() {
        assert_eq!(Paths::at_home(Path::new("/t/h")), paths(&[("CLIX_HOME", "/t/h"), ("HOME", "/home/u")], None));
    }

    #[test]
    fn explicit_config_file_wins() {
        let p = paths(&[("CLIX_HOME", "/t/h")], Some("/etc/my.toml"));
        assert_eq!(p.config_file, PathBuf::from("/etc/my.toml"));
        assert_eq!(p.data_dir, PathBuf::from("/t/h/data"));
    }
}
