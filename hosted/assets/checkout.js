// The hosted checkout's few behaviours, in plain JavaScript (no build step): copy buttons, the
// countdown, following the payment until it settles, the pay button held once pressed, and card
// tokenization by the gateway's script.
(function () {
  'use strict';

  // The page's own address, to open it on a phone (ShopeePay pays from the phone's app).
  var pageLink = document.getElementById('page-link');
  if (pageLink) pageLink.value = window.location.origin + window.location.pathname;

  document.querySelectorAll('button.copy').forEach(function (button) {
    button.addEventListener('click', function () {
      var source = document.getElementById(button.getAttribute('data-copy'));
      var text = (source.tagName === 'INPUT' ? source.value : source.textContent).trim();
      var done = function () { button.textContent = button.getAttribute('data-copied'); };
      if (navigator.clipboard) navigator.clipboard.writeText(text).then(done, done); else done();
    });
  });

  var payment = document.getElementById('payment');
  if (payment) {
    var countdown = document.getElementById('countdown');
    var expiresAt = payment.getAttribute('data-expires-at');
    if (countdown && expiresAt) {
      var end = Date.parse(expiresAt);
      var tick = function () {
        var left = Math.max(0, Math.floor((end - Date.now()) / 1000));
        var h = Math.floor(left / 3600), m = Math.floor((left % 3600) / 60), s = left % 60;
        countdown.textContent = (h > 0 ? h + ':' : '') + String(m).padStart(2, '0') + ':' + String(s).padStart(2, '0');
      };
      tick();
      setInterval(tick, 1000);
    }
    // Polling rather than server-sent events: one small GET every two seconds, through any
    // proxy; every ten seconds once the page has waited ten minutes (a virtual account paid
    // later at an ATM). A network error backs off up to half a minute and says so; a link
    // gone (410, 404) says so and stops, leading back to the shop.
    var statusUrl = payment.getAttribute('data-status-url');
    var shownState = payment.getAttribute('data-state');
    var shownOrder = payment.getAttribute('data-order');
    var started = Date.now();
    var failures = 0;
    var gone = document.getElementById('link-gone');
    var trouble = document.getElementById('poll-trouble');
    var every = function () { return Date.now() - started > 10 * 60 * 1000 ? 10000 : 2000; };
    var again = function () {
      failures += 1;
      if (trouble && failures >= 2) trouble.hidden = false;
      setTimeout(poll, Math.min(30000, every() * Math.pow(2, failures)));
    };
    var poll = function () {
      fetch(statusUrl, { credentials: 'same-origin', headers: { Accept: 'application/json' }, cache: 'no-store' })
        .then(function (res) {
          if (res.status === 410 || res.status === 404) {
            if (gone) gone.hidden = false;
            if (trouble) trouble.hidden = true;
            payment.hidden = true;
            return;
          }
          if (!res.ok) return again();
          return res.json().then(function (status) {
            failures = 0;
            if (trouble) trouble.hidden = true;
            if (status.state === 'paid' || status.state === 'trialing') {
              window.location.assign(status.next);
              return;
            }
            // Anything else new (the charge made, failed, declined or expired, or another method
            // chosen in another tab or on another device): the page shows it.
            if (status.state !== shownState || (shownOrder && status.order_id && status.order_id !== shownOrder)) {
              window.location.assign(window.location.pathname + window.location.search);
              return;
            }
            setTimeout(poll, every());
          });
        })
        .catch(again);
    };
    if (statusUrl) setTimeout(poll, 2000);
  }

  var form = document.getElementById('checkout-form');
  if (!form) return;
  var showFields = function () {
    var chosen = form.querySelector('input[name="payment_type"]:checked');
    form.querySelectorAll('[data-for]').forEach(function (el) {
      el.hidden = !chosen || chosen.value !== el.getAttribute('data-for');
    });
  };
  form.querySelectorAll('input[name="payment_type"]').forEach(function (r) { r.addEventListener('change', showFields); });
  showFields();

  // Pressed once, the pay button holds until the page changes: a second press sends nothing.
  var pay = document.getElementById('pay');
  var label = pay.textContent;
  var hold = function () {
    pay.disabled = true;
    pay.setAttribute('aria-busy', 'true');
    pay.textContent = form.getAttribute('data-busy');
  };
  var release = function () {
    pay.disabled = false;
    pay.removeAttribute('aria-busy');
    pay.textContent = label;
  };
  // Back to this page from the browser's history: the button works again.
  window.addEventListener('pageshow', function (event) { if (event.persisted) release(); });

  // Units or a code typed without Apply: the server prices them and shows the new total before
  // anything is charged, so the card is not sent to the gateway's script for this submit.
  var priced = function (name) { var el = form.querySelector('input[name="' + name + '"]'); return el ? el.value : null; };
  var termsChanged = function () {
    var quantity = document.getElementById('quantity');
    var code = document.getElementById('promotion-code');
    if (priced('priced_quantity') === null) return false;
    return (quantity !== null && quantity.value.trim() !== priced('priced_quantity')) ||
      (code !== null && code.value.trim().toUpperCase() !== priced('priced_promotion_code').toUpperCase());
  };

  form.addEventListener('submit', function (event) {
    // Apply (units, a promotion code) prices the checkout again: nothing to tokenise or hold.
    if (event.submitter && event.submitter.name === 'apply') return;
    if (pay.disabled) {
      event.preventDefault();
      return;
    }
    var chosen = form.querySelector('input[name="payment_type"]:checked');
    var token = document.getElementById('card-token');
    if (!chosen || chosen.value !== 'credit_card' || token.value || termsChanged()) {
      hold();
      return;
    }
    event.preventDefault();
    hold();
    var error = document.getElementById('card-error');
    error.hidden = true;
    var value = function (id) { return document.getElementById(id).value.replace(/\s+/g, ''); };
    // The card goes to the gateway's own script, which answers a one-time token: the card
    // fields have no name, so the form itself never sends them to this server.
    window.MidtransNew3ds.getCardToken(
      { card_number: value('card-number'), card_exp_month: value('card-month'), card_exp_year: value('card-year'), card_cvv: value('card-cvv') },
      {
        onSuccess: function (response) { token.value = response.token_id; form.submit(); },
        onFailure: function (response) {
          release();
          error.textContent = error.getAttribute('data-refused').replace('{reason}', (response && (response.status_message || (response.validation_messages || []).join(', '))) || '');
          error.hidden = false;
        },
      },
    );
  });
})();
