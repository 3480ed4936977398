//! Schema versions: one row per component in `clix_schema` (`shared` here,
//! `memory` in clix-memory), each brought up to date only when asked
//! (`clix storage migrate`), step by step, in one transaction under one
//! advisory lock, so that two migrations at once run each step once and a
//! failing step leaves the database as it was. Nothing is ever dropped.

use postgres::Client;

use crate::{Connection, StoreError};

/// The schema of one component: step n brings it from version n - 1 to n.
pub struct Component {
    /// Its row in `clix_schema`.
    pub name: &'static str,
    /// Its steps, oldest first; the version is their number.
    pub steps: &'static [&'static str],
}

impl Component {
    /// The version this clix needs.
    pub fn version(&self) -> i32 {
        i32::try_from(self.steps.len()).unwrap_or(i32::MAX)
    }

    /// Fails unless the database holds exactly this clix's version.
    pub fn check(&self, connection: &Connection) -> Result<(), StoreError> {
        let found = connection.with(|client| found(client, self.name))?;
        self.compare(connection.shown(), found)?;
        if found < self.version() {
            return Err(StoreError::NeedsMigration {
                url: connection.shown().to_string(),
                component: self.name,
                found,
                wanted: self.version(),
            });
        }
        Ok(())
    }

    /// Brings the database to this clix's version, running `prelude` first
    /// when there is anything to do (e.g. creating an extension, whose
    /// failure the caller explains); (version before, after).
    pub fn migrate<E: From<StoreError> + Send>(
        &self,
        connection: &Connection,
        prelude: impl FnOnce(&mut postgres::Transaction<'_>) -> Result<(), E> + Send,
    ) -> Result<(i32, i32), E> {
        let wanted = self.version();
        let outcome = connection.with(|client| {
            let mut tx = client.transaction()?;
            tx.batch_execute(
                "SELECT pg_advisory_xact_lock(hashtext('clix_schema'));
                 CREATE TABLE IF NOT EXISTS clix_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL)",
            )?;
            let found: i32 = tx
                .query_opt("SELECT version FROM clix_schema WHERE component = $1", &[&self.name])?
                .map_or(0, |r| r.get(0));
            if found >= wanted {
                return Ok(Ok(found));
            }
            if let Err(e) = prelude(&mut tx) {
                return Ok(Err(e));
            }
            for step in self.steps.iter().skip(usize::try_from(found).unwrap_or(0)) {
                tx.batch_execute(step)?;
            }
            tx.execute(
                "INSERT INTO clix_schema (component, version) VALUES ($1, $2)
                 ON CONFLICT (component) DO UPDATE SET version = excluded.version",
                &[&self.name, &wanted],
            )?;
            tx.commit()?;
            Ok(Ok(found))
        })??;
        self.compare(connection.shown(), outcome)?;
        Ok((outcome, wanted))
    }

    fn compare(&self, shown: &str, found: i32) -> Result<(), StoreError> {
        if found > self.version() {
            return Err(StoreError::TooNew {
                url: shown.to_string(),
                component: self.name,
                found,
                wanted: self.version(),
            });
        }
        Ok(())
    }
}

/// The version of `component` in the database (0: none yet), read without
/// changing anything.
pub fn found(client: &mut Client, component: &str) -> Result<i32, postgres::Error> {
    let exists: bool = client.query_one("SELECT to_regclass('clix_schema') IS NOT NULL", &[])?.get(0);
    if !exists {
        return Ok(0);
    }
    let row = client.query_opt("SELECT version FROM clix_schema WHERE component = $1", &[&component])?;
    Ok(row.map_or(0, |r| r.get(0)))
}
