-- histField(entry, n) -> the n-th "|"-separated field of a history entry (1-based).
-- A history entry is "seq|messageId|sender|kind|countsUnread|createdAt|contentType|body".
local function histField(entry, n)
  local i = 1
  for part in string.gmatch(entry, "([^|]*)|?") do
    if i == n then return part end
    i = i + 1
  end
  return nil
end
