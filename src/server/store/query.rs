//! Paged `Query`s with filters, forward and back: a page of exactly `size` matching items
//! however many DynamoDB had to skip for a `FilterExpression`, with cursors that come back
//! sealed and bound to the query ([`cursor`]). Never a `Scan`.

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::types::{AttributeValue, Select};

use super::cursor::{self, Binding};
use super::{Store, StoreError};

pub type Item = HashMap<String, AttributeValue>;

/// A condition on one attribute.
#[derive(Clone, Debug)]
pub enum Cond {
    Eq(AttributeValue),
    /// Inclusive at both ends.
    Between(AttributeValue, AttributeValue),
    BeginsWith(String),
    /// Strictly less than.
    Lt(AttributeValue),
    /// Strictly greater than.
    Gt(AttributeValue),
    /// Anything but this value.
    Ne(AttributeValue),
    /// The attribute is absent.
    Absent,
    /// One of these values.
    In(Vec<AttributeValue>),
}

/// One query: a partition of the table or of one of its indexes, an optional sort-key
/// condition, and filters on other attributes.
#[derive(Clone, Debug)]
pub struct Spec {
    pub table: String,
    pub index: Option<&'static str>,
    pub pk: (&'static str, AttributeValue),
    pub sk: Option<(&'static str, Cond)>,
    pub filters: Vec<(&'static str, Cond)>,
    /// The order pages are shown in: true for ascending sort keys.
    pub ascending: bool,
    /// The key attributes of the table and of the index: a cursor is made of these.
    pub key_attrs: Vec<&'static str>,
    /// Attributes to read (`None`: all). Key attributes are added.
    pub projection: Option<Vec<&'static str>>,
}

/// Where a page starts.
#[derive(Clone, Copy, Debug)]
pub enum Start<'a> {
    First,
    /// The page after this cursor.
    After(&'a str),
    /// The page before this cursor.
    Before(&'a str),
}

/// Where a page starts, as a table key (for a cursor made of several queries' positions,
/// sealed once by its maker).
#[derive(Clone, Debug)]
pub enum From {
    First,
    After(Item),
    Before(Item),
}

/// A page, with the sealed cursors of the pages either side.
#[derive(Debug, Default)]
pub struct Page {
    /// In display order.
    pub items: Vec<Item>,
    pub next: Option<String>,
    pub prev: Option<String>,
}

/// A page, with the table keys where the pages either side start.
#[derive(Debug, Default)]
pub struct KeyedPage {
    /// In display order.
    pub items: Vec<Item>,
    pub next: Option<Item>,
    pub prev: Option<Item>,
}

/// Query calls one page may make before it answers with what it found (a filter that
/// matches rarely must not hold a request for long).
pub const MAX_CALLS: usize = 8;

struct Built {
    key_condition: String,
    filter: Option<String>,
    names: HashMap<String, String>,
    values: HashMap<String, AttributeValue>,
}

fn condition(
    placeholder: &str,
    cond: &Cond,
    values: &mut HashMap<String, AttributeValue>,
) -> String {
    match cond {
        Cond::Eq(v) => {
            values.insert(format!(":{placeholder}"), v.clone());
            format!("#{placeholder} = :{placeholder}")
        }
        Cond::Between(a, b) => {
            values.insert(format!(":{placeholder}a"), a.clone());
            values.insert(format!(":{placeholder}b"), b.clone());
            format!("#{placeholder} BETWEEN :{placeholder}a AND :{placeholder}b")
        }
        Cond::Lt(v) => {
            values.insert(format!(":{placeholder}"), v.clone());
            format!("#{placeholder} < :{placeholder}")
        }
        Cond::Gt(v) => {
            values.insert(format!(":{placeholder}"), v.clone());
            format!("#{placeholder} > :{placeholder}")
        }
        Cond::Ne(v) => {
            values.insert(format!(":{placeholder}"), v.clone());
            format!("#{placeholder} <> :{placeholder}")
        }
        Cond::BeginsWith(prefix) => {
            values.insert(format!(":{placeholder}"), AttributeValue::S(prefix.clone()));
            format!("begins_with(#{placeholder}, :{placeholder})")
        }
        Cond::Absent => format!("attribute_not_exists(#{placeholder})"),
        Cond::In(vs) => {
            let names: Vec<String> = vs
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    values.insert(format!(":{placeholder}{i}"), v.clone());
                    format!(":{placeholder}{i}")
                })
                .collect();
            format!("#{placeholder} IN ({})", names.join(", "))
        }
    }
}

impl Spec {
    fn build(&self) -> Built {
        let mut names = HashMap::new();
        let mut values = HashMap::new();
        names.insert("#pk".to_string(), self.pk.0.to_string());
        values.insert(":pk".to_string(), self.pk.1.clone());
        let mut key_condition = "#pk = :pk".to_string();
        if let Some((name, cond)) = &self.sk {
            names.insert("#sk".to_string(), name.to_string());
            key_condition = format!("{key_condition} AND {}", condition("sk", cond, &mut values));
        }
        let mut parts = Vec::new();
        for (i, (name, cond)) in self.filters.iter().enumerate() {
            let p = format!("f{i}");
            names.insert(format!("#{p}"), name.to_string());
            parts.push(condition(&p, cond, &mut values));
        }
        Built {
            key_condition,
            filter: (!parts.is_empty()).then(|| parts.join(" AND ")),
            names,
            values,
        }
    }

    fn projection_expression(&self, names: &mut HashMap<String, String>) -> Option<String> {
        let wanted = self.projection.as_ref()?;
        let mut all: Vec<&str> = self.key_attrs.clone();
        for a in wanted {
            if !all.contains(a) {
                all.push(a);
            }
        }
        let mut parts = Vec::new();
        for (i, a) in all.iter().enumerate() {
            names.insert(format!("#p{i}"), a.to_string());
            parts.push(format!("#p{i}"));
        }
        Some(parts.join(", "))
    }

    /// The key attributes of `item` (where a page after it starts).
    pub(crate) fn key_of(&self, item: &Item) -> Item {
        self.key_attrs
            .iter()
            .filter_map(|a| item.get(*a).map(|v| (a.to_string(), v.clone())))
            .collect()
    }

    /// What this query's cursors are bound to: everything that decides which items it
    /// reads and in which order.
    pub(crate) fn binding(&self) -> Binding {
        let mut parts = vec![
            self.table.clone(),
            self.index.unwrap_or("").to_string(),
            self.pk.0.to_string(),
            cursor::part(&self.pk.1),
            self.ascending.to_string(),
        ];
        let conds = self.sk.iter().chain(self.filters.iter());
        for (name, cond) in conds {
            parts.push(name.to_string());
            parts.extend(cond_parts(cond));
        }
        Binding::new(parts.iter().map(String::as_str))
    }
}

fn cond_parts(cond: &Cond) -> Vec<String> {
    match cond {
        Cond::Eq(v) => vec!["=".into(), cursor::part(v)],
        Cond::Between(a, b) => vec!["between".into(), cursor::part(a), cursor::part(b)],
        Cond::BeginsWith(p) => vec!["begins".into(), p.clone()],
        Cond::Lt(v) => vec!["<".into(), cursor::part(v)],
        Cond::Gt(v) => vec![">".into(), cursor::part(v)],
        Cond::Ne(v) => vec!["<>".into(), cursor::part(v)],
        Cond::Absent => vec!["absent".into()],
        Cond::In(vs) => std::iter::once("in".to_string())
            .chain(vs.iter().map(cursor::part))
            .collect(),
    }
}

/// A `Query` of `spec`'s partition with its conditions (`built` from it), to be given
/// its direction, limit and start.
fn request(store: &Store, spec: &Spec, built: &Built) -> QueryFluentBuilder {
    store
        .client()
        .query()
        .table_name(&spec.table)
        .set_index_name(spec.index.map(str::to_string))
        .key_condition_expression(&built.key_condition)
        .set_filter_expression(built.filter.clone())
        .set_expression_attribute_names(Some(built.names.clone()))
        .set_expression_attribute_values(Some(built.values.clone()))
}

/// One page of matching items, from a cursor this query handed out.
pub async fn page(
    store: &Store,
    spec: &Spec,
    start: Start<'_>,
    size: usize,
) -> Result<Page, StoreError> {
    let binding = spec.binding();
    let cursors = store.cursors();
    let open = |c: &str| cursors.open_key(&binding, c, &spec.key_attrs);
    let from = match start {
        Start::First => From::First,
        Start::After(c) => From::After(open(c)?),
        Start::Before(c) => From::Before(open(c)?),
    };
    let page = page_from(store, spec, from, size).await?;
    let seal = |k: Item| cursors.seal_key(&binding, &k);
    Ok(Page {
        items: page.items,
        next: page.next.map(seal),
        prev: page.prev.map(seal),
    })
}

/// One page of matching items, from a table key.
pub async fn page_from(
    store: &Store,
    spec: &Spec,
    from: From,
    size: usize,
) -> Result<KeyedPage, StoreError> {
    page_within(store, spec, from, size, MAX_CALLS).await
}

/// [`page_from`] in at most `calls` `Query` calls: where the last one stopped is the next
/// page's start, however few of the items it read matched the filter.
pub async fn page_within(
    store: &Store,
    spec: &Spec,
    from: From,
    size: usize,
    calls: usize,
) -> Result<KeyedPage, StoreError> {
    let size = size.max(1);
    let (forward, exclusive) = match &from {
        From::First => (spec.ascending, None),
        From::After(k) => (spec.ascending, Some(k.clone())),
        From::Before(k) => (!spec.ascending, Some(k.clone())),
    };
    let read = read_matches(store, spec, forward, exclusive, size, calls.max(1)).await?;
    Ok(arrange(spec, from, read, size))
}

/// What the `Query` calls of one page found, in reading order.
struct Read {
    /// Up to `size + 1` items: one more than the page says there is a next page.
    found: Vec<Item>,
    /// Where to resume when the calls ran out before the page filled.
    resume: Option<Item>,
}

/// Reads in one direction from `exclusive` until more than `size` items matched, the
/// partition ended, or `calls` calls were made.
async fn read_matches(
    store: &Store,
    spec: &Spec,
    forward: bool,
    mut exclusive: Option<Item>,
    size: usize,
    calls: usize,
) -> Result<Read, StoreError> {
    let mut built = spec.build();
    let projection = spec.projection_expression(&mut built.names);
    let mut found: Vec<Item> = Vec::new();
    let mut resume: Option<Item> = None;
    // A filter may skip items: read what the page still needs, then four times more on
    // each call that comes back short.
    let mut limit = (size + 1) as i32;
    for call in 0..calls {
        if built.filter.is_none() {
            limit = (size + 1 - found.len()) as i32;
        }
        let out = request(store, spec, &built)
            .set_projection_expression(projection.clone())
            .scan_index_forward(forward)
            .limit(limit)
            .set_exclusive_start_key(exclusive.take())
            .send()
            .await
            .map_err(StoreError::request("Query"))?;
        found.extend(out.items.unwrap_or_default());
        let last = out.last_evaluated_key.filter(|k| !k.is_empty());
        if found.len() > size || last.is_none() {
            break;
        }
        if call + 1 == calls {
            resume = last;
        } else {
            exclusive = last;
        }
        limit = (limit * 4).min(1000);
    }
    Ok(Read { found, resume })
}

/// The page `start` asked for: at most `size` items in display order, with the cursors of
/// the pages either side (a page read backwards is turned round).
fn arrange(spec: &Spec, from: From, read: Read, size: usize) -> KeyedPage {
    let Read { mut found, resume } = read;
    let more = found.len() > size || resume.is_some();
    found.truncate(size);
    // Past the items found, where the next page in this direction begins.
    let onward = match resume {
        Some(k) => Some(k),
        None if more => found.last().map(|i| spec.key_of(i)),
        None => None,
    };
    let mut page = KeyedPage::default();
    match from {
        From::First => {
            page.next = onward;
            page.items = found;
        }
        From::After(_) => {
            page.next = onward;
            page.prev = found.first().map(|i| spec.key_of(i));
            page.items = found;
        }
        From::Before(start) => {
            found.reverse();
            page.prev = onward;
            page.next = found.last().map(|i| spec.key_of(i)).or(Some(start));
            page.items = found;
        }
    }
    page
}

/// How many items match, in at most `max_calls` reads of at most `per_call` items each
/// (and 1 MB). `exact` is false when it stopped before the end.
pub async fn count(
    store: &Store,
    spec: &Spec,
    max_calls: usize,
    per_call: Option<i32>,
) -> Result<Count, StoreError> {
    let built = spec.build();
    let mut n = 0u64;
    let mut exclusive = None;
    for _ in 0..max_calls.max(1) {
        let out = request(store, spec, &built)
            .select(Select::Count)
            .set_limit(per_call)
            .set_exclusive_start_key(exclusive.take())
            .send()
            .await
            .map_err(StoreError::request("Query"))?;
        n += out.count.max(0) as u64;
        match out.last_evaluated_key.filter(|k| !k.is_empty()) {
            Some(k) => exclusive = Some(k),
            None => return Ok(Count { n, exact: true }),
        }
    }
    Ok(Count { n, exact: false })
}

/// How many items the query matches, by their value of `attr` (absent: ""), in at most
/// `max_calls` calls: what [`count`] of each value would give, for the read units of
/// one count (a read is billed by what it reads, not by what it returns).
pub async fn count_by(
    store: &Store,
    spec: &Spec,
    attr: &str,
    max_calls: usize,
) -> Result<(std::collections::BTreeMap<String, u64>, bool), StoreError> {
    let built = spec.build();
    let mut by = std::collections::BTreeMap::new();
    let mut exclusive = None;
    for _ in 0..max_calls.max(1) {
        let out = request(store, spec, &built)
            .projection_expression("#by")
            .expression_attribute_names("#by", attr)
            .set_exclusive_start_key(exclusive.take())
            .send()
            .await
            .map_err(StoreError::request("Query"))?;
        for item in out.items.unwrap_or_default() {
            let value = item
                .get(attr)
                .and_then(|v| v.as_s().ok())
                .cloned()
                .unwrap_or_default();
            *by.entry(value).or_insert(0) += 1;
        }
        match out.last_evaluated_key.filter(|k| !k.is_empty()) {
            Some(k) => exclusive = Some(k),
            None => return Ok((by, true)),
        }
    }
    Ok((by, false))
}

/// Every item a `Query` matches, page after page: DynamoDB ends each page at 1 MB (or at a
/// `Limit`), and a caller that needs every match must follow `LastEvaluatedKey`.
pub async fn every(req: QueryFluentBuilder) -> Result<Vec<Item>, StoreError> {
    let mut out = Vec::new();
    let mut start = None;
    loop {
        let page = req
            .clone()
            .set_exclusive_start_key(start.take())
            .send()
            .await
            .map_err(StoreError::request("Query"))?;
        out.extend(page.items.unwrap_or_default());
        match page.last_evaluated_key.filter(|k| !k.is_empty()) {
            Some(k) => start = Some(k),
            None => return Ok(out),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Count {
    pub n: u64,
    pub exact: bool,
}
