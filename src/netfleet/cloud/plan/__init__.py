"""Plan (provider-neutral): which machines a study holds when (:mod:`.waves`) and how long a
type's runs may last (:mod:`.stopbound`) — decided before anything is acquired."""
