"""Plan on AWS, before anything billable exists: prices (:mod:`.prices`, :mod:`.pricelist`,
:mod:`.billing`), the cost guard (:mod:`.costs`), vCPU quotas (:mod:`.quotas`), permissions
(:mod:`.permissions`), the safety gate (:mod:`.safety`) and the instance catalogue
(:mod:`.catalogue`)."""
