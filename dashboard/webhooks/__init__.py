"""The webhooks of the viewer's subscription, shown on /account (pages/account.py):
section.py (the list, the form's actions, the delivery log), form.py (the form from the served
document's create_webhook body), trial_delivery.py (following a queued test delivery)."""

LOG_PAGE = 20  # delivery-log attempts per read
