use leptos::prelude::*;

use crate::model::measurements::{AttemptPage, MeasurementsView};
use crate::model::AppError;

/// A user's series and attempts, the rates over `window` (`24h`, `7d`), and the measurement
/// endpoints' idempotency health.
#[server]
pub async fn load_measurements(
    user: String,
    outcome: String,
    cursor: Option<String>,
    window: String,
) -> Result<MeasurementsView, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::services::measurements::pages;
    let me = ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    let now = state.clock.now();
    // Links carry a user's reference, never the id (docs/security.md); an id typed into
    // the address is counted as the person's lookup.
    let refs = state.answer_refs(&me.name, &[], &[&user]).await?;
    let user = refs.given_user(&user).into_id();
    let (points, rejected) = if user.is_empty() {
        (Vec::new(), Vec::new())
    } else {
        pages::series(&state.store, &user).await?
    };
    let mut attempts = pages::for_role(
        pages::attempts(&state.store, &user, &outcome, cursor.as_deref()).await?,
        me.role,
    );
    attempts.user_ref = refs.user(&user);
    let settings = &state.measurements.settings;
    let max = settings.alert_duplicate_max_pct;
    let (rates, resolution) = if user.is_empty() {
        (
            pages::rates(&state.store, &window, max, now).await?,
            String::new(),
        )
    } else {
        pages::rates_of_user(&state.store, &user, &window, max, now).await?
    };
    let scopes = pages::endpoint_health(&state.idempotency, &rates.window).await?;
    // The rules judge every user over 24 hours: read again only what the page did not.
    let everyone = match (user.is_empty(), rates.window.as_str()) {
        (true, "24h") => rates.clone(),
        _ => pages::rates(&state.store, "24h", max, now).await?,
    };
    let scopes_24h = match rates.window.as_str() {
        "24h" => scopes.clone(),
        _ => pages::endpoint_health(&state.idempotency, "24h").await?,
    };
    Ok(MeasurementsView {
        rules: pages::rule_lines(&everyone, &scopes_24h, settings),
        resolution,
        user_ref: refs.user(&user),
        user: crate::server::domain::redact::for_role(me.role, &user),
        points,
        rejected,
        attempts,
        rates,
        idempotency: scopes,
    })
}

/// Measurement attempts of one user or one outcome, for the Audit page.
#[server]
pub async fn list_measurement_attempts(
    user: String,
    outcome: String,
    cursor: Option<String>,
) -> Result<AttemptPage, AppError> {
    use crate::model::users::Role;
    use crate::server::ctx;
    use crate::server::services::measurements::pages;
    let me = ctx::require(Role::Viewer)?;
    let state = ctx::state()?;
    let refs = state.answer_refs(&me.name, &[], &[&user]).await?;
    let user = refs.given_user(&user).into_id();
    let page = pages::attempts(&state.store, &user, &outcome, cursor.as_deref()).await?;
    let mut page = pages::for_role(page, me.role);
    page.user_ref = refs.user(&user);
    Ok(page)
}
