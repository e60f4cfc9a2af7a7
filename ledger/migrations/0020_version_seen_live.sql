-- seen_live: a done swap or rollback moved a view to this version or away from it, so trueup saw
-- it live (the validation gate lets such a `previous` version through again without an override).
-- Set by the publish's outcome with the versions' states (views.Store.setStates) and kept when the
-- record is written again (views.Store.Put); a version recorded before this column reads false,
-- and the gate then asks the swaps' history, as it always did.
ALTER TABLE versions ADD COLUMN seen_live BOOLEAN DEFAULT false;
