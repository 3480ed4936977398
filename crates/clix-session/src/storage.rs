//! `clix storage show|migrate`: every component of the store in one place
//! (the memories, and with `[storage] url` the shared records: rate
//! counts, locks, audit, plan checkpoints, eval results), one line each.

use anyhow::{Result, bail};
use clix_config::Paths;
use clix_postgres::SharedStore;

use crate::settings::{Settings, storage_location};

/// Whether each component can be used as it is; an error names the first
/// that cannot and says what to do (its line is printed before it).
pub fn show_storage(paths: &Paths, settings: &Settings, out: &mut dyn FnMut(String)) -> Result<()> {
    let location = storage_location(paths, settings);
    if let Err(e) = clix_memory::Store::at(&location) {
        out(format!("memory: {location}"));
        bail!("memory: {e}");
    }
    out(format!("memory: {location} (ready)"));
    match settings.storage.url.expose() {
        "" => out(format!("shared: {} (this machine only; set [storage] url to share)", paths.state_dir.display())),
        url => match SharedStore::connect(url) {
            Ok(store) => out(format!("shared: {} (ready)", store.shown())),
            Err(e) => {
                out(format!("shared: {}", clix_common::redact_url(url)));
                bail!("shared: {e}");
            }
        },
    }
    Ok(())
}

/// Brings each component to this clix's schema, keeping everything in it.
pub fn migrate_storage(paths: &Paths, settings: &Settings, out: &mut dyn FnMut(String)) -> Result<()> {
    let location = storage_location(paths, settings);
    let memory = clix_memory::migrate_at(&location)?;
    out(migrated("memory", &location.to_string(), memory.from, memory.to));
    let url = settings.storage.url.expose();
    if !url.is_empty() {
        let (from, to) = SharedStore::migrate(url)?;
        out(migrated("shared", &clix_common::redact_url(url), from, to));
    }
    Ok(())
}

fn migrated(component: &str, shown: &str, from: i32, to: i32) -> String {
    if from == to {
        format!("{component}: {shown} is at schema {to} already")
    } else {
        format!("{component}: {shown} migrated from schema {from} to {to}")
    }
}
