// Security's keychain item API, as much as AttestClient calls (Apple's documentation, Security:
// SecItemCopyMatching, SecItemAdd, SecItemUpdate, SecItemDelete, the item attribute keys and
// values, OSStatus codes). Core Foundation is simplified: CFString is String, CFDictionary is
// [String: Any], CFTypeRef is AnyObject.
public typealias OSStatus = Int32
public typealias CFTypeRef = AnyObject
public typealias CFString = String
public typealias CFDictionary = [String: Any]

public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus { fatalError("stub") }
public func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus { fatalError("stub") }
public func SecItemUpdate(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus { fatalError("stub") }
public func SecItemDelete(_ query: CFDictionary) -> OSStatus { fatalError("stub") }

public var errSecSuccess: OSStatus { 0 }
public var errSecItemNotFound: OSStatus { -25300 }
public var errSecDuplicateItem: OSStatus { -25299 }
public var errSecInteractionNotAllowed: OSStatus { -25308 }

public let kSecClass: CFString = "class"
public let kSecClassGenericPassword: CFString = "genp"
public let kSecAttrService: CFString = "svce"
public let kSecAttrAccount: CFString = "acct"
public let kSecAttrAccessGroup: CFString = "agrp"
public let kSecAttrAccessible: CFString = "pdmn"
public let kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString = "cku"
public let kSecAttrSynchronizable: CFString = "sync"
public let kSecReturnData: CFString = "r_Data"
public let kSecMatchLimit: CFString = "m_Limit"
public let kSecMatchLimitOne: CFString = "m_LimitOne"
public let kSecValueData: CFString = "v_Data"
