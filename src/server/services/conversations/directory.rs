//! The company directory's rules: what a conversation files in it, and which company a
//! typed id or name means. The directory itself is `store::directory`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::model::conversations::CompanyChoice;
use crate::model::AppError;
use crate::server::store::conversations::Conversation;
use crate::server::store::directory::{self as store, Company, Entry};
use crate::server::store::Store;

/// The most companies a page suggests.
pub const SUGGESTIONS: usize = 2_000;

/// How many entries this process remembers having filed before it forgets them all.
const MEMORY: usize = 10_000;

/// The directory, and what this process filed in it today. The memory only saves writes
/// (each console files a company and project at most once a day); the directory is the
/// same without it.
#[derive(Clone)]
pub struct Directory {
    store: Store,
    noted: Arc<Mutex<HashMap<String, i64>>>,
}

/// Which company a search's typed text means.
#[derive(Clone, Debug, PartialEq)]
pub enum Resolved {
    /// One company: by its id (any case), by its whole name, or the only name containing
    /// the text.
    One(CompanyChoice),
    /// Several names contain the text: the person chooses.
    Several(Vec<CompanyChoice>),
    /// The directory does not know it: searched as a company id, as typed.
    Unknown,
}

impl Directory {
    pub fn new(store: Store) -> Directory {
        Directory {
            store,
            noted: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// Files `c`'s company and project, unless this process did so today with the same
    /// names. A failure is logged, not returned: the conversation is stored either way.
    pub async fn note(&self, c: &Conversation, today: i64) {
        let key = [
            c.company_id.as_str(),
            &c.project_id,
            c.company_name.as_deref().unwrap_or_default(),
            c.project_name.as_deref().unwrap_or_default(),
        ]
        .join("\u{0}");
        if self
            .noted
            .lock()
            .map(|m| m.get(&key) == Some(&today))
            .unwrap_or(false)
        {
            return;
        }
        let entry = Entry {
            company_id: &c.company_id,
            company_name: c.company_name.as_deref(),
            project_id: &c.project_id,
            project_name: c.project_name.as_deref(),
            expires_at: c.ttl,
        };
        match store::note(&self.store, &entry).await {
            Ok(()) => {
                if let Ok(mut m) = self.noted.lock() {
                    if m.len() >= MEMORY {
                        m.clear();
                    }
                    m.insert(key, today);
                }
            }
            Err(e) => tracing::warn!(error = %e, "company directory not updated"),
        }
    }

    /// The companies to suggest at `now` (epoch seconds), named ones first by name.
    pub async fn suggestions(&self, now: i64) -> Result<Vec<CompanyChoice>, AppError> {
        let mut all: Vec<CompanyChoice> = store::list(&self.store, now)
            .await?
            .into_iter()
            .map(choice)
            .collect();
        all.sort_by_key(|c| {
            (
                c.name.is_empty(),
                c.name.to_lowercase(),
                c.company_id.clone(),
            )
        });
        all.truncate(SUGGESTIONS);
        Ok(all)
    }

    /// The company `typed` means, at `now`.
    pub async fn resolve(&self, typed: &str, now: i64) -> Result<Resolved, AppError> {
        Ok(resolve(typed, &store::list(&self.store, now).await?))
    }
}

fn choice(c: Company) -> CompanyChoice {
    CompanyChoice {
        company_id: c.company_id,
        name: c.name,
    }
}

/// An id in any case first, then a whole name in any case, then the names that contain
/// the text.
pub fn resolve(typed: &str, companies: &[Company]) -> Resolved {
    let t = typed.trim().to_lowercase();
    if t.is_empty() {
        return Resolved::Unknown;
    }
    let one = |c: &Company| Resolved::One(choice(c.clone()));
    if let Some(c) = companies.iter().find(|c| c.company_id.to_lowercase() == t) {
        return one(c);
    }
    let named: Vec<&Company> = companies
        .iter()
        .filter(|c| c.name.to_lowercase() == t)
        .collect();
    if let [c] = named.as_slice() {
        return one(c);
    }
    let mut containing: Vec<CompanyChoice> = companies
        .iter()
        .filter(|c| c.name.to_lowercase().contains(&t))
        .cloned()
        .map(choice)
        .collect();
    containing.sort_by_key(|c| c.name.to_lowercase());
    match containing.len() {
        0 => Resolved::Unknown,
        1 => Resolved::One(containing.remove(0)),
        _ => Resolved::Several(containing),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn company(id: &str, name: &str) -> Company {
        Company {
            company_id: id.into(),
            name: name.into(),
            ..Company::default()
        }
    }

    #[test]
    fn ids_and_names_in_any_case_and_several_when_ambiguous() {
        let all = [
            company("ci-aaa-001", "Cucumber Recruitment"),
            company("ci-bbb-002", "Cucumber Logistics"),
            company("ci-ccc-003", "Northwind"),
        ];
        let id = |r: Resolved| match r {
            Resolved::One(c) => c.company_id,
            other => panic!("{other:?}"),
        };
        assert_eq!(id(resolve("CI-AAA-001", &all)), "ci-aaa-001");
        assert_eq!(id(resolve("northWIND", &all)), "ci-ccc-003");
        assert_eq!(id(resolve("logist", &all)), "ci-bbb-002");
        match resolve(" cucumber ", &all) {
            Resolved::Several(c) => assert_eq!(
                c.iter().map(|c| c.company_id.as_str()).collect::<Vec<_>>(),
                ["ci-bbb-002", "ci-aaa-001"]
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(resolve("ci-zzz-999", &all), Resolved::Unknown);
        assert_eq!(resolve("  ", &all), Resolved::Unknown);
    }
}
