// The hosted checkout's few behaviours, in plain JavaScript (no build step): copy buttons, the
// countdown, waiting for the payment to settle, and card tokenization by the gateway's script.
(function () {
  'use strict';

  document.querySelectorAll('button.copy').forEach(function (button) {
    button.addEventListener('click', function () {
      var text = document.getElementById(button.getAttribute('data-copy')).textContent.trim();
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
    // Polling rather than server-sent events: one small GET every two seconds, through any proxy.
    var statusUrl = payment.getAttribute('data-status-url');
    var poll = function () {
      fetch(statusUrl, { credentials: 'same-origin', headers: { Accept: 'application/json' } })
        .then(function (res) { return res.ok ? res.json() : null; })
        .then(function (status) {
          // card_check: a trial's card still waits for the bank's 3-D Secure step.
          if (status && status.state !== 'pending' && status.state !== 'card_check') {
            // Paid or trial started: on to the shop; failed, declined or expired: back to the
            // choice, which says so (next to the card form for a declined card).
            window.location.assign(status.state === 'paid' || status.state === 'trialing' ? status.next : window.location.pathname + window.location.search);
            return;
          }
          setTimeout(poll, 2000);
        }, function () { setTimeout(poll, 2000); });
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

  form.addEventListener('submit', function (event) {
    var chosen = form.querySelector('input[name="payment_type"]:checked');
    var token = document.getElementById('card-token');
    if (!chosen || chosen.value !== 'credit_card' || token.value) return;
    event.preventDefault();
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
          error.textContent = error.getAttribute('data-refused').replace('{reason}', (response && (response.status_message || (response.validation_messages || []).join(', '))) || '');
          error.hidden = false;
        },
      },
    );
  });
})();
