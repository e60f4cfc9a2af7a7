package main

import (
	"trueup/config"
	"trueup/notices"
)

// noticeChannels turns trueup.yaml's notify section into the channels notices sends through.
// The config has checked every value (addresses, URLs, the webhook each subscription names);
// notices takes them as they are.
func noticeChannels(n config.Notify) notices.Channels {
	ch := notices.Channels{
		PublicURL: n.PublicURL,
		Email: notices.Email{
			SMTP:     n.Email.SMTP,
			From:     n.Email.From,
			Username: n.Email.Username,
			Password: n.Email.Password,
			StartTLS: n.Email.StartTLS,
		},
	}
	if n.Webhooks != nil {
		ch.Webhooks = make(map[string]notices.Webhook, len(n.Webhooks))
		for name, w := range n.Webhooks {
			ch.Webhooks[name] = notices.Webhook{URL: w.URL, Secret: w.Secret}
		}
	}
	for _, s := range n.Subscriptions {
		ch.Subscriptions = append(ch.Subscriptions, notices.Subscription{Table: s.Table, Exposure: s.Exposure, Webhook: s.Webhook, Email: s.Email})
	}
	return ch
}
